"""One settings table (SET-010..050): every environment variable llamabot reads is declared once in
``llamabot.settings.SETTINGS`` (type, default, bounds, what it does), read through ``setting()``, and the README's
Configuration table lists exactly those variables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llamabot.errors import SettingsError
from llamabot.settings import SETTINGS, setting

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"\b(?:LLAMABOT|ANOT)_[A-Z0-9_]*[A-Z0-9]\b")


def test_set_010_every_variable_the_package_names_is_declared():
    used = {m for path in (ROOT / "llamabot").rglob("*.py") for m in NAME.findall(path.read_text())}
    assert used - set(SETTINGS) == set(), "declare these in llamabot/settings.py SETTINGS"
    assert set(SETTINGS) - used == set(), "declared but never read"


def test_set_020_the_readme_table_lists_exactly_the_declared_variables():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    listed = set(NAME.findall(table))
    assert listed == set(SETTINGS)


@pytest.mark.parametrize("name", sorted(n for n, s in SETTINGS.items() if s.kind == "int"))
def test_set_030_whole_number_settings_refuse_what_is_out_of_bounds_naming_the_variable(name, monkeypatch):
    spec = SETTINGS[name]
    monkeypatch.setenv(name, str(spec.maximum + 1))
    with pytest.raises(SettingsError, match=re.escape(f"${name}=")):
        setting(name)
    monkeypatch.setenv(name, str(spec.minimum))
    assert setting(name) == spec.minimum
    monkeypatch.delenv(name)
    assert setting(name) == (spec.default() if callable(spec.default) else spec.default)


def test_set_040_an_undeclared_name_is_an_error():
    with pytest.raises(KeyError):
        setting("LLAMABOT_NO_SUCH_THING")


def test_set_050_a_misspelled_variable_is_an_error_naming_both_not_a_silent_default(monkeypatch):
    monkeypatch.delenv("LLAMABOT_DURABLE_GRACE_S", raising=False)
    monkeypatch.setenv("LLAMABOT_DURABLE_GRACE", "5")
    with pytest.raises(SettingsError, match=r"\$LLAMABOT_DURABLE_GRACE is set but llamabot reads "
                                            r"\$LLAMABOT_DURABLE_GRACE_S"):
        setting("LLAMABOT_DURABLE_GRACE_S")
    monkeypatch.setenv("LLAMABOT_DURABLE_GRACE_S", "7")  # the right one set: it is read, the other left alone
    assert setting("LLAMABOT_DURABLE_GRACE_S") == 7
    monkeypatch.delenv("LLAMABOT_DURABLE_GRACE_S")
    monkeypatch.setenv("LLAMABOT_DURABLE_GRACE", "")  # blank counts as unset
    monkeypatch.setenv("LLAMABOT_BENCH_QUICK", "1")  # a name not like any setting is not ours to judge
    assert setting("LLAMABOT_DURABLE_GRACE_S") == 20
