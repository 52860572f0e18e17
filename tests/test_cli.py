"""The command line: help, model listing and pulling, one-shot chat on the embedded model."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from llamabot.cli import app

runner = CliRunner()


def test_cli_010_help_lists_the_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "chat" in result.output and "models" in result.output


def test_cli_020_models_lists_aliases_and_their_state(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMABOT_CACHE_DIR", str(tmp_path))
    result = runner.invoke(app, ["models"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "local/qwen2.5-coder-1.5b (default)" in result.output
    assert "local/qwen2.5-coder-0.5b" in result.output
    assert "missing" in result.output  # nothing assembled in this empty cache
    assert str(tmp_path) in result.output


def test_cli_030_pulling_an_unknown_model_fails_clearly():
    result = runner.invoke(app, ["models", "pull", "gpt-17"])
    assert result.exit_code == 2
    assert "unknown model" in result.output


def test_cli_040_chat_without_any_model_explains_how_to_set_one(monkeypatch):
    from llamabot.models import resolve

    monkeypatch.delenv("LLAMABOT_MODEL", raising=False)
    monkeypatch.setattr(resolve, "local_runtime_installed", lambda: False)
    result = runner.invoke(app, ["chat", "hello"])
    assert result.exit_code == 1
    assert "LLAMABOT_MODEL" in result.output


@pytest.mark.local_model
def test_cli_050_chat_answers_on_the_embedded_model(local_model_name):
    result = runner.invoke(
        app, ["chat", "--model", local_model_name, "--max-tokens", "16", "--no-stream", "What is 2 + 2? Digits only."]
    )
    assert result.exit_code == 0, result.output
    assert "4" in result.output
