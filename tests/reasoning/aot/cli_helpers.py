"""Running ``llamabot aot`` on a scripted model, for the tests of its flags."""

from __future__ import annotations

from typing import Any


def run_aot_cli(plan: dict[str, Any], *flags: str, name: str) -> tuple[Any, Any]:
    """``llamabot aot q --model <a scripted provider answering plan> *flags``; returns (CLI result, the model)."""
    from typer.testing import CliRunner

    from llamabot.cli import app
    from llamabot.models.scripted import ScriptedModel, json_reply
    from llamabot.models.scripted_provider import register_scripted_provider

    model = ScriptedModel([json_reply(plan)], name=name)
    provider = register_scripted_provider(model, prefix=f"scripted-{name}")
    result = CliRunner().invoke(app, ["aot", "q", "--model", provider, *flags], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result, model
