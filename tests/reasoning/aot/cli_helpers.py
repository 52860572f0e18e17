"""Running ``llamabot aot`` on a scripted model, for the tests of its flags."""

from __future__ import annotations

from typing import Any


def run_aot_cli(plan: dict[str, Any], *flags: str, name: str) -> tuple[Any, Any]:
    """``llamabot aot QUESTION --model <a scripted provider answering plan> *flags``; returns (CLI result, the model)."""
    from typer.testing import CliRunner

    from llamabot.cli import app
    from llamabot.models.scripted import ScriptedModel, json_reply
    from llamabot.models.scripted_provider import register_scripted_provider

    model = ScriptedModel([json_reply(plan)], name=name)
    provider = register_scripted_provider(model, prefix=f"scripted-{name}")
    question = "Amy had 4 pens and 21 pencils and gave 23 away. How many are left?"  # the numbers of its plans
    result = CliRunner().invoke(app, ["aot", question, "--model", provider, *flags], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result, model
