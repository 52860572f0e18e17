"""Settings read from the environment or given in code refuse values that would be misread (HARD-SET-*): integer
variables, ``~user`` paths, the durable database URL and its secrets, a shut-down durable runtime."""

from __future__ import annotations

import pytest

from llamabot.errors import SettingsError
from llamabot.models.local.runtime import LocalSettings, LocalSettingsError
from llamabot.models.registry import cache_dir
from llamabot.settings import env_int, env_seconds

NO_USER = "~llamabot-no-such-user-7f3a"


# -- HARD-SET-010: integer variables take ASCII digits within bounds -----------------------------------------------


@pytest.mark.parametrize("value", ["1_000", "12345678901234567890", "١٢", "1e3", "+4", "0x10", "4.0"])
def test_hard_set_010_an_integer_variable_refuses_what_int_would_misread(monkeypatch, value):
    monkeypatch.setenv("LLAMABOT_LOCAL_THREADS", value)
    with pytest.raises(LocalSettingsError, match=r"\$LLAMABOT_LOCAL_THREADS=.*digits 0-9 only") as raised:
        LocalSettings.from_env()
    assert isinstance(raised.value, SettingsError)


def test_hard_set_010_an_integer_variable_refuses_values_past_its_bound(monkeypatch):
    monkeypatch.setenv("LLAMABOT_PREFIX_CACHE_BYTES", "9" * 18)  # 18 digits: past the 1 PiB bound
    with pytest.raises(LocalSettingsError, match=r"\$LLAMABOT_PREFIX_CACHE_BYTES=.*from 0 to"):
        LocalSettings.from_env()


def test_hard_set_010_plain_digits_blank_and_unset_are_read_as_before(monkeypatch):
    monkeypatch.setenv("LLAMABOT_TEST_INT", " 42 ")
    assert env_int("LLAMABOT_TEST_INT", 7, minimum=1, maximum=100) == 42
    monkeypatch.setenv("LLAMABOT_TEST_INT", "  ")
    assert env_int("LLAMABOT_TEST_INT", 7) == 7
    monkeypatch.delenv("LLAMABOT_TEST_INT")
    assert env_int("LLAMABOT_TEST_INT", 7) == 7


@pytest.mark.parametrize("value", ["0", "1e3", "inf", "nan", "1_0", "٣", "100000"])
def test_hard_set_010_a_seconds_variable_takes_positive_decimals_only(monkeypatch, value):
    monkeypatch.setenv("LLAMABOT_TEST_SECONDS", value)
    with pytest.raises(SettingsError, match=r"\$LLAMABOT_TEST_SECONDS="):
        env_seconds("LLAMABOT_TEST_SECONDS", 60.0)
    monkeypatch.setenv("LLAMABOT_TEST_SECONDS", "2.5")
    assert env_seconds("LLAMABOT_TEST_SECONDS", 60.0) == 2.5


# -- HARD-SET-020: a ~user that does not exist is a typed error naming the variable ----------------------------------


def test_hard_set_020_a_cache_dir_under_an_unknown_user_names_the_variable(monkeypatch):
    monkeypatch.setenv("LLAMABOT_CACHE_DIR", f"{NO_USER}/cache")
    with pytest.raises(SettingsError, match=r"\$LLAMABOT_CACHE_DIR=.*cannot expand"):
        cache_dir()


def test_hard_set_020_a_prefix_cache_dir_under_an_unknown_user_names_the_variable(monkeypatch):
    monkeypatch.setenv("LLAMABOT_PREFIX_CACHE_DIR", f"{NO_USER}/prefixes")
    with pytest.raises(LocalSettingsError, match=r"\$LLAMABOT_PREFIX_CACHE_DIR=.*cannot expand"):
        LocalSettings.from_env()


def test_hard_set_020_a_database_path_under_an_unknown_user_names_where_it_came_from(monkeypatch):
    from llamabot.durable import DatabaseURLError, resolve_db_url

    with pytest.raises(DatabaseURLError, match=r"the db argument=.*cannot expand"):
        resolve_db_url(f"{NO_USER}/runs.sqlite")
    monkeypatch.setenv("LLAMABOT_DB", f"{NO_USER}/runs.sqlite")
    with pytest.raises(DatabaseURLError, match=r"\$LLAMABOT_DB=.*cannot expand"):
        resolve_db_url()


# -- HARD-SET-030: the durable database URL ------------------------------------------------------------------------


def test_hard_set_030_a_blank_llamabot_db_is_an_error_naming_it(monkeypatch):
    from llamabot.durable import DatabaseURLError, resolve_db_url

    monkeypatch.setenv("LLAMABOT_DB", "   ")
    with pytest.raises(DatabaseURLError, match=r"\$LLAMABOT_DB is empty.*unset LLAMABOT_DB"):
        resolve_db_url()


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite:///file::memory:?cache=shared",
                                 "sqlite:///file:runs?mode=memory&uri=true", ":memory:"])
def test_hard_set_030_an_in_memory_sqlite_database_is_refused_at_resolution(monkeypatch, url):
    from llamabot.durable import DatabaseURLError, resolve_db_url

    with pytest.raises(DatabaseURLError, match=r"the db argument: .*in-memory SQLite database"):
        resolve_db_url(url)
    monkeypatch.setenv("LLAMABOT_DB", url)
    with pytest.raises(DatabaseURLError, match=r"\$LLAMABOT_DB: .*in-memory"):
        resolve_db_url()


@pytest.mark.parametrize("url", [
    "postgresql://u@h?password=secret",  # names no database
    "mysql://u@h/db?sslmode=require&password=secret",  # an unsupported scheme
    "mysql://u:secret@h/db?sslpassword=secret&application_name=x",
])
def test_hard_set_030_secrets_in_the_query_string_never_reach_an_error(url):
    from llamabot.durable import DatabaseURLError, resolve_db_url
    from llamabot.durable.config import redacted

    with pytest.raises(DatabaseURLError) as raised:
        resolve_db_url(url)
    assert "secret" not in str(raised.value) and "***" in str(raised.value)
    assert redacted("postgresql://u@h/db?application_name=x&password=secret") == (
        "postgresql://u@h/db?application_name=x&password=***"
    )


def test_hard_set_030_an_unreachable_database_with_a_query_password_does_not_print_it():
    from llamabot.durable import DatabaseUnreachableError, Durable
    from tests.durable.postgres import free_port

    with pytest.raises(DatabaseUnreachableError) as raised:
        Durable("tests.durable.agents:make_agent", db=f"postgresql://u@127.0.0.1:{free_port()}/db?password=secret")
    assert "secret" not in str(raised.value) and "password=***" in str(raised.value)


# -- HARD-SET-040: a shut-down durable runtime -----------------------------------------------------------------------


def test_hard_set_040_running_after_shutdown_is_a_typed_error_saying_so(tmp_path):
    from llamabot.durable import Durable, DurableRuntimeError, shutdown

    agent = Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    shutdown()
    try:
        for start in (lambda: agent.run("after shutdown"), lambda: agent.enqueue("after shutdown"),
                      lambda: agent.start("after shutdown")):
            with pytest.raises(DurableRuntimeError, match=r"was shut down.*create a new Durable"):
                start()
    finally:
        shutdown()


async def test_hard_set_040_async_runs_after_shutdown_raise_the_same(tmp_path):
    from llamabot.durable import Durable, DurableRuntimeError, shutdown

    agent = Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    shutdown()
    try:
        with pytest.raises(DurableRuntimeError, match="was shut down"):
            await agent.arun("after shutdown")
        with pytest.raises(DurableRuntimeError, match="was shut down"):
            await agent.aenqueue("after shutdown")
    finally:
        shutdown()
