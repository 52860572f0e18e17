"""``llamabot --otel URL <command>`` (OBS-OTEL-160): the command's runs arrive at an OTLP/HTTP receiver this test
starts on loopback, flushed before the command returns; a bad URL is refused before anything runs."""

from __future__ import annotations

from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.models.scripted import ScriptedModel, tool_call
from llamabot.models.scripted_provider import register_scripted_provider
from llamabot.observe.tracing import process_hooks

from .receiver import OTLPReceiver


def test_obs_otel_160_the_cli_exports_a_commands_runs_to_the_collector_it_is_given():
    model = ScriptedModel([tool_call("multiply", a=23, b=19), tool_call("respond_to_user", response="437")],
                          name="otel-cli")
    name = register_scripted_provider(model, prefix="scripted-otel-cli")
    with OTLPReceiver() as receiver:
        result = CliRunner().invoke(app, ["--otel", receiver.endpoint, "agent", "What is 23 * 19?", "--model", name,
                                          "--tool", "llamabot.toolkits.calculator:multiply", "--quiet"])
        assert result.exit_code == 0, result.output
        assert "437" in result.output
        spans = list(receiver.spans)  # already here: the export was flushed when the command ended
    assert set(receiver.paths) == {"/v1/traces"}
    names = sorted(s["name"] for s in spans)
    assert names.count("decision") == 2 and "invoke_agent AgentBot" in names
    assert "execute_tool multiply" in names and "execute_tool respond_to_user" in names
    assert len({s["trace_id"] for s in spans}) == 1
    assert not process_hooks()  # export stopped with the command


def test_obs_otel_160_a_url_that_is_not_http_is_refused_before_the_command_runs():
    model = ScriptedModel([tool_call("respond_to_user", response="never")], name="otel-cli-bad")
    name = register_scripted_provider(model, prefix="scripted-otel-cli-bad")
    result = CliRunner().invoke(app, ["--otel", "localhost:4318", "agent", "q", "--model", name, "--quiet"])
    assert result.exit_code == 2
    assert "http(s)://" in result.output and not model.requests
    assert not process_hooks()
