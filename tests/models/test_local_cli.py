"""``llamabot models`` shows and clears the saved prompt prefixes (no model needed: the states are made up)."""

from __future__ import annotations

from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.models.local.prefix_cache import DiskPrefixCache, PrefixKey, PrefixState
from llamabot.models.registry import LOCAL_MODELS

runner = CliRunner()


def test_cli_060_models_lists_and_clears_saved_prefixes(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMABOT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LLAMABOT_PREFIX_CACHE_DIR", str(tmp_path / "prefixes"))
    spec = LOCAL_MODELS["qwen2.5-coder-0.5b"]
    cache = DiskPrefixCache(tmp_path / "prefixes", max_bytes=1 << 30)
    for n in (3, 5):
        tokens = tuple(range(n))
        cache.put(
            PrefixKey(f"sha256:{spec.sha256}", "llama_cpp=x", "n_ctx=8192", tokens),
            PrefixState(tokens, b"x" * 2_000_000),
        )

    listing = runner.invoke(app, ["models"], env={"COLUMNS": "220"})
    assert listing.exit_code == 0, listing.output
    assert "2 (3.8 MB)" in listing.output and "2 saved prefixes" in listing.output
    assert str(tmp_path / "prefixes") in listing.output and "threads" in listing.output

    table = runner.invoke(app, ["models", "prefixes"], env={"COLUMNS": "220"})
    assert table.exit_code == 0 and table.output.count("local/qwen2.5-coder-0.5b") == 2

    cleared = runner.invoke(app, ["models", "prefixes", "--clear"])
    assert cleared.exit_code == 0 and "3.8 MB freed" in cleared.output
    assert cache.entries() == []


def test_cli_060_a_bad_setting_is_reported_not_a_traceback(monkeypatch):
    monkeypatch.setenv("LLAMABOT_PREFIX_CACHE_BYTES", "lots")
    result = runner.invoke(app, ["models", "prefixes"])
    assert result.exit_code == 1 and "LLAMABOT_PREFIX_CACHE_BYTES" in result.output
