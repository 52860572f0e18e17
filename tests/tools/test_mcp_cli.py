"""``llamabot agent --mcp ...`` (TLS-MCP-100): the agent command with an MCP server's tools, on a scripted model
behind LiteLLM; the server is stopped when the command ends."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.models.scripted import ScriptedModel, tool_call
from llamabot.models.scripted_provider import register_scripted_provider
from tests.agent.helpers import tool_messages
from tests.fixtures.mcp_helpers import SERVER_COMMAND, gone_within


def test_tls_mcp_100_agent_mcp_uses_the_servers_tools_and_stops_the_server():
    def answer(request):
        done = tool_messages(request)
        if not done:
            return tool_call("server_pid")
        if len(done) == 1:
            return tool_call("add", a=2, b=40)
        return tool_call("respond_to_user", response=f"{done[-1]['content']} (server {done[0]['content']})")

    model = ScriptedModel(responder=answer, name="mcp-cli")
    name = register_scripted_provider(model, prefix="scripted-mcp-cli")
    result = CliRunner().invoke(app, ["agent", "What is 2 + 40?", "--model", name, "--mcp", SERVER_COMMAND])
    assert result.exit_code == 0, result.output
    found = re.search(r"42\.0 \(server (\d+)\)", result.output)
    assert found, result.output
    assert gone_within(int(found.group(1)))
    offered = {t["function"]["name"] for t in model.requests[0].tools}
    assert {
        "add",
        "describe_point",
        "respond_to_user",
    } <= offered and "multiply" not in offered  # no calculator


def test_tls_mcp_100_agent_mcp_with_a_server_that_cannot_start_exits_1_naming_it():
    result = CliRunner().invoke(
        app, ["agent", "q", "--model", "scripted/none", "--mcp", "no-such-mcp-server"]
    )
    assert result.exit_code == 1
    assert "MCP server 'no-such-mcp-server': could not start a session" in result.output


def test_tls_mcp_100_a_server_dying_mid_run_exits_1_naming_it():
    model = ScriptedModel([tool_call("die")], name="mcp-cli-die")
    name = register_scripted_provider(model, prefix="scripted-mcp-cli-die")
    result = CliRunner().invoke(
        app,
        [
            "agent",
            "q",
            "--model",
            name,
            "--mcp",
            SERVER_COMMAND,
            "--tool",
            "llamabot.toolkits.calculator:multiply",
        ],
    )
    assert result.exit_code == 1
    assert "MCP server" in result.output and "tool 'die'" in result.output
    assert "multiply" in {t["function"]["name"] for t in model.requests[0].tools}  # --tool and --mcp together


def test_tls_mcp_180_agent_mcp_approval_stops_before_the_call_without_a_terminal():
    model = ScriptedModel([tool_call("server_pid"), tool_call("respond_to_user", response="done")], name="mcp-gate")
    name = register_scripted_provider(model, prefix="scripted-mcp-gate")
    result = CliRunner().invoke(app, ["agent", "pid?", "--model", name, "--mcp", SERVER_COMMAND, "--mcp-approval"])
    assert result.exit_code == 3 and "needs approval for server_pid" in result.output, result.output
    assert len(model.requests) == 1  # the run stopped before the call: no result went back to the model
