"""MCP servers as tools (TLS-MCP-*): a real server built with the ``mcp`` package (tests/fixtures/mcp_server.py),
started as a subprocess over stdio or reached over streamable HTTP; bots run on the scripted model."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import time

import pytest

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel
from llamabot.agents.nodes import FuncNode
from llamabot.errors import MCPServerError, ToolArgumentsError, ToolDefinitionError
from llamabot.models.scripted import json_reply, tool_call
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN
from llamabot.toolkits.calculator import multiply, subtract
from llamabot.tools import Tool
from llamabot.tools.call import ainvoke_tool, invoke_tool
from llamabot.tools.mcp import MCPToolError, MCPTools, mcp_tools
from tests.agent.helpers import tool_messages
from tests.fixtures.mcp_helpers import SERVER_ARGV, SERVER_COMMAND, gone_within, http_server, is_running


@pytest.fixture(scope="module")
def server() -> MCPTools:
    """One stdio server for the tests that do not stop it."""
    with mcp_tools(SERVER_COMMAND) as tools:
        yield tools


def by_name(tools: MCPTools) -> dict[str, Tool]:
    return {t.name: t for t in tools}


def respond_with_last_tool_result(request):
    """Answer with the content of the last tool message of this run."""
    return tool_call("respond_to_user", response=tool_messages(request)[-1]["content"])


# -- TLS-MCP-010: a command's tools, with the server's schemas as they are ------------------------------------


def test_tls_mcp_010_a_stdio_server_gives_its_tools_with_their_schemas_as_given(server):
    tools = by_name(server)
    assert set(tools) == {"add", "fail", "describe_point", "where", "slow", "server_pid", "die"}
    point = tools["describe_point"]
    assert point.description == "Describe a point given as a nested object."
    assert point.parameters["$defs"]["Point"]["properties"]["x"]["minimum"] == 0  # as the server wrote it
    assert point.parameters["properties"]["point"] == {"$ref": "#/$defs/Point"}
    assert point.json_schema["function"]["name"] == "describe_point"
    assert all(isinstance(t, Tool) and not t.is_async and t.afunc is not None for t in server)
    assert server.server == SERVER_COMMAND and repr(server).startswith("MCPTools(")


def test_tls_mcp_010_only_and_prefix_choose_and_rename_tools():
    with mcp_tools(SERVER_ARGV, only=["add"], prefix="calc.") as tools:
        assert tools.names == ["calc_add"]  # '.' is not accepted in a model API's tool name
        assert invoke_tool(tools[0], {"a": 2, "b": 3}).value == 5.0  # called by its server name


def test_tls_mcp_010_only_naming_a_missing_tool_is_a_typed_error_and_stops_the_server():
    with pytest.raises(ToolDefinitionError, match=r"has no tool 'nope'; it has: add, fail"):
        mcp_tools(SERVER_ARGV, only=["nope"])


def test_tls_mcp_010_a_command_gets_its_env_and_cwd_and_not_the_rest_of_ours(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMABOT_MCP_NOT_PASSED", "secret")
    with mcp_tools(SERVER_ARGV, env={"LLAMABOT_MCP_PASSED": "yes"}, cwd=tmp_path, only=["where"]) as tools:
        assert invoke_tool(tools[0], {"variable": "LLAMABOT_MCP_PASSED"}).value == {
            "cwd": str(tmp_path),
            "value": "yes",
        }
        assert invoke_tool(tools[0], {"variable": "LLAMABOT_MCP_NOT_PASSED"}).value["value"] is None


# -- TLS-MCP-020: the URL form ---------------------------------------------------------------------------------


def test_tls_mcp_020_a_streamable_http_url_gives_the_same_tools():
    with http_server() as (url, _), mcp_tools(url) as tools:
        assert tools.server == url
        assert invoke_tool(by_name(tools)["add"], '{"a": 1.5, "b": 2}').value == 3.5
        error = invoke_tool(by_name(tools)["fail"], {"reason": "over http"}).error
        assert error == "MCPToolError: Error executing tool fail: failed on purpose: over http"


def test_tls_mcp_020_a_dead_http_server_ends_the_call_with_a_typed_error_naming_the_url():
    with http_server() as (url, process), mcp_tools(url) as tools:
        process.kill()
        process.wait(10)
        with pytest.raises(MCPServerError) as info:
            invoke_tool(by_name(tools)["add"], {"a": 1, "b": 2})
        assert info.value.server == url


# -- TLS-MCP-030: bots take them like @tool functions ----------------------------------------------------------


def test_tls_mcp_030_agentbot_calls_an_mcp_tool_and_answers_with_its_result(server):
    model = ScriptedModel([tool_call("add", a=20, b=22), respond_with_last_tool_result])
    bot = AgentBot(tools=server, model=model)
    assert bot("What is 20 + 22?") == "42.0"
    sent = {t["function"]["name"]: t["function"]["parameters"] for t in model.requests[0].tools}
    assert sent["describe_point"] == by_name(server)["describe_point"].parameters  # the schema as given
    assert [s.attributes["result"] for s in bot.last_trace.of_kind("tool_call")][0] == 42.0


async def test_tls_mcp_030_async_agentbot_awaits_mcp_tools_concurrently(server):
    bot = AsyncAgentBot(
        tools=server,
        model=ScriptedModel(
            responder=lambda r: (
                tool_call("describe_point", point={"x": int(r.last_user_text), "y": 1})
                if not tool_messages(r)
                else respond_with_last_tool_result(r)
            )
        ),
    )
    import asyncio

    answers = await asyncio.gather(*(bot.arun(str(i)) for i in range(5)))
    assert answers == [f"({i}, 1) cm" for i in range(5)]


def test_tls_mcp_030_aot_runs_a_plan_whose_atoms_call_an_mcp_tool(server):
    mcp_add = by_name(server)["add"]
    result = AoTBot(
        tools=[mcp_add, multiply, subtract], model=ScriptedModel([json_reply(EXAMPLE_PLAN)])
    )("What is (15 + 7) * 3 - 10?")
    assert result.answer == 56
    assert result.record.atoms[1].result == 22.0  # structured content: a number, not the text "22.0"


def test_tls_mcp_030_a_custom_graph_wires_an_mcp_tool_like_any_tool(server):
    from llamabot.agents.agent_state import new_run_state
    from llamabot.agents.nodes import DecideNode
    from llamabot.bot.toolbot import ToolBot
    from llamabot.graph.flow import Flow
    from llamabot.tools.defaults import respond_to_user

    model = ScriptedModel([tool_call("add", a=12, b=30), respond_with_last_tool_result])
    tools = [by_name(server)["add"], respond_to_user]
    decide = DecideNode(ToolBot("Add.", model=model, tools=tools))
    for t in tools:
        node = FuncNode(t if isinstance(t, Tool) else t.tool)
        decide - node.name >> node
        node - "decide" >> decide
    decide - "decide" >> decide
    shared = new_run_state("12 + 30?", memory=[])
    Flow(start=decide).run(shared)
    assert shared["result"] == "42.0"


# -- TLS-MCP-040: arguments checked against the schema as given ------------------------------------------------


def test_tls_mcp_040_arguments_breaking_the_nested_schema_are_shown_to_the_model_without_a_server_call(
    server,
):
    tool = by_name(server)["describe_point"]
    outcome = invoke_tool(tool, '{"point": {"x": 1, "y": -2}, "unit": "mm"}')
    assert isinstance(outcome.exception, ToolArgumentsError) and outcome.attempts == 0
    assert outcome.exception.errors == [
        "point.y: -2 is less than the minimum of 0",
        "unit: 'mm' is not one of ['cm', 'in']",
    ]
    model = ScriptedModel(
        [
            tool_call("describe_point", point={"x": 1}),
            tool_call("describe_point", point={"x": 1, "y": 2}),
            respond_with_last_tool_result,
        ]
    )
    assert AgentBot(tools=server, model=model)("q") == "(1, 2) cm"
    feedback = model.requests[1].messages[-1]
    assert feedback["role"] == "tool" and "point: 'y' is a required property" in feedback["content"]


# -- TLS-MCP-050: the server's errors are shown to the model ---------------------------------------------------


def test_tls_mcp_050_a_failing_server_tool_is_shown_to_the_model_which_goes_on(server):
    model = ScriptedModel(
        [tool_call("fail", reason="no data"), tool_call("add", a=1, b=1), respond_with_last_tool_result]
    )
    assert AgentBot(tools=server, model=model)("q") == "2.0"
    shown = model.requests[1].messages[-1]["content"]
    assert shown == "Error: MCPToolError: Error executing tool fail: failed on purpose: no data"


async def test_tls_mcp_050_an_error_result_raises_mcp_tool_error_naming_server_and_tool(server):
    outcome = await ainvoke_tool(by_name(server)["fail"], {"reason": "x"})
    assert isinstance(outcome.exception, MCPToolError)
    assert (outcome.exception.server, outcome.exception.tool) == (SERVER_COMMAND, "fail")


def test_tls_mcp_050_a_protocol_error_is_an_mcp_tool_error(server):
    from llamabot.tools.mcp import MCPToolFunction

    unknown = MCPToolFunction(by_name(server)["add"].func.connection, "nope", None, "nope")
    with pytest.raises(MCPToolError, match="Unknown tool: nope"):
        unknown()


async def test_tls_mcp_050_a_tool_timeout_is_shown_to_the_model_sync_and_async():
    with mcp_tools(SERVER_ARGV, only=["slow", "add"], timeout=0.3) as tools:
        slow = by_name(tools)["slow"]
        assert (
            invoke_tool(slow, {"seconds": 2}).error == "TimeoutError: tool 'slow' did not finish within 0.3 s"
        )
        assert (
            await ainvoke_tool(slow, {"seconds": 2})
        ).error == "TimeoutError: tool 'slow' did not finish within 0.3 s"


# -- TLS-MCP-060: a server that dies ends the run --------------------------------------------------------------


def test_tls_mcp_060_a_server_dying_mid_run_ends_the_run_with_a_typed_error_naming_it():
    with mcp_tools(SERVER_ARGV) as tools:
        model = ScriptedModel([tool_call("add", a=1, b=2), tool_call("die"), tool_call("add", a=1, b=2)])
        bot = AgentBot(tools=tools, model=model)
        with pytest.raises(MCPServerError, match=r"closed during a call of tool 'die'") as info:
            bot("q")
        assert info.value.server == SERVER_COMMAND == tools.server
        assert len(model.requests) == 2  # the model was not asked again
        assert bot.last_trace.of_kind("tool_call")[-1].error is not None
        with pytest.raises(MCPServerError):  # every later call says the same
            invoke_tool(by_name(tools)["add"], {"a": 1, "b": 2})


async def test_tls_mcp_060_async_runs_end_the_same_way():
    async with mcp_tools(SERVER_ARGV) as tools:
        bot = AsyncAgentBot(tools=tools, model=ScriptedModel([tool_call("die")]))
        with pytest.raises(MCPServerError, match="tool 'die'"):
            await bot.arun("q")


# -- TLS-MCP-070: closing stops the server; no orphans ---------------------------------------------------------


def _pid(tools: MCPTools) -> int:
    pid = invoke_tool(by_name(tools)["server_pid"], {}).value
    assert is_running(pid)
    return pid


def test_tls_mcp_070_close_stops_the_server_process_and_later_calls_raise():
    tools = mcp_tools(SERVER_ARGV)
    pid = _pid(tools)
    tools.close()
    assert tools.closed and gone_within(pid)
    tools.close()  # idempotent
    with pytest.raises(MCPServerError, match="the connection is closed; tool 'add' cannot be called"):
        invoke_tool(by_name(tools)["add"], {"a": 1, "b": 2})


def test_tls_mcp_070_closing_during_a_call_ends_that_call_with_a_typed_error():
    import threading

    tools = mcp_tools(SERVER_ARGV)
    pid = _pid(tools)
    raised = []

    def call_slow() -> None:
        try:
            invoke_tool(by_name(tools)["slow"], {"seconds": 30})
        except MCPServerError as exc:  # the run would end with it
            raised.append(exc)

    call = threading.Thread(target=call_slow)
    call.start()
    time.sleep(0.5)
    tools.close()
    call.join(30)
    assert "tool 'slow' (close() was called)" in str(raised[0])
    assert gone_within(pid)


def test_tls_mcp_070_closing_the_bot_or_leaving_its_with_block_stops_the_server():
    tools = mcp_tools(SERVER_ARGV)
    pid = _pid(tools)
    with AgentBot(
        tools=tools, model=ScriptedModel([tool_call("add", a=1, b=2), respond_with_last_tool_result])
    ) as bot:
        assert bot("q") == "3.0"
    assert tools.closed and gone_within(pid)


async def test_tls_mcp_070_async_with_on_the_bot_stops_the_server():
    tools = mcp_tools(SERVER_ARGV)
    pid = _pid(tools)
    async with AsyncAgentBot(tools=tools, model=ScriptedModel()):
        pass
    assert gone_within(pid)


def test_tls_mcp_070_a_collected_toolset_stops_its_server():
    tools = mcp_tools(SERVER_ARGV)
    pid = _pid(tools)
    del tools
    gc.collect()
    assert gone_within(pid)


def test_tls_mcp_070_an_interpreter_that_exits_without_closing_leaves_no_server_behind():
    code = textwrap.dedent(f"""
        from llamabot.tools.call import invoke_tool
        from llamabot.tools.mcp import mcp_tools
        tools = mcp_tools({SERVER_ARGV!r})
        print(invoke_tool({{t.name: t for t in tools}}["server_pid"], {{}}).value, flush=True)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert gone_within(int(result.stdout.strip()))


# -- TLS-MCP-080: a server that cannot be used -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ("no-such-mcp-server --stdio", "could not start a session: FileNotFoundError"),
        (
            [sys.executable, "-c", "import sys; sys.exit(3)"],
            "could not start a session: MCPError: Connection closed",
        ),
        ("", "the command is empty"),
        ('python "unclosed', "cannot split the command line"),
        (42, "give a command"),
        ("http:///mcp", "the URL has no host"),
    ],
)
def test_tls_mcp_080_a_server_that_cannot_start_is_a_typed_error_naming_it(server, problem):
    with pytest.raises(MCPServerError, match=problem):
        mcp_tools(server, connect_timeout=60)


def test_tls_mcp_080_an_unreachable_url_is_a_typed_error_naming_it_without_credentials():
    from tests.fixtures.mcp_helpers import free_port

    url = f"http://user:secret@127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPServerError, match="ConnectError") as info:
        mcp_tools(url)
    assert "secret" not in str(info.value) and info.value.server.startswith("http://127.0.0.1:")


def test_tls_mcp_080_a_server_that_never_answers_times_out_and_is_stopped(tmp_path):
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    started = time.monotonic()
    with pytest.raises(MCPServerError, match="did not answer the MCP handshake within 1.0 s"):
        mcp_tools([sys.executable, "-c", code], connect_timeout=1.0)
    assert gone_within(int(pid_file.read_text()), seconds=0.5)  # stopped before mcp_tools returned
    assert time.monotonic() - started < 8


# -- TLS-MCP-090: results ---------------------------------------------------------------------------------------


def test_tls_mcp_090_structured_results_are_values_and_text_results_are_text(server):
    tools = by_name(server)
    assert invoke_tool(tools["add"], {"a": 1, "b": 2}).value == 3.0
    assert isinstance(invoke_tool(tools["server_pid"], {}).value, int)
    assert invoke_tool(tools["describe_point"], {"point": {"x": 0, "y": 0}}).value == "(0, 0) cm"
    assert json.loads(json.dumps(invoke_tool(tools["add"], {"a": 1, "b": 2}).value)) == 3.0


def test_tls_mcp_090_other_content_blocks_become_one_line_descriptions():
    from mcp.types import (
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    from llamabot.tools.mcp.results import content_text

    blocks = [
        TextContent(type="text", text="Here:"),
        ImageContent(type="image", data="QUJDRA==", mime_type="image/png"),
        EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///a.txt", text="inside")),
        EmbeddedResource(type="resource", resource=BlobResourceContents(uri="file:///b.bin", blob="AA==")),
        ResourceLink(type="resource_link", name="report", uri="file:///r.pdf"),
    ]
    assert content_text(blocks).split("\n\n") == [
        "Here:",
        "[image image/png, 6 bytes]",
        "inside",
        "[resource file:///b.bin, binary]",
        "[resource report: file:///r.pdf]",
    ]


# -- TLS-MCP-180: an MCP tool may require approval ---------------------------------------------------------------


def test_tls_mcp_180_requires_approval_gates_the_named_tools_and_no_run_calls_them_undecided():
    from llamabot.agents.approval import ApprovalRequired, Decision

    with mcp_tools(SERVER_ARGV, only=["add", "server_pid"], requires_approval=["add"]) as tools:
        gated = {t.name: t.requires_approval for t in tools}
        assert gated == {"add": True, "server_pid": False}
        model = ScriptedModel([tool_call("add", a=1, b=2), respond_with_last_tool_result])
        bot = AgentBot(tools=tools, model=model)
        with pytest.raises(ApprovalRequired) as paused:
            bot("1 + 2?")
        assert [r.tool for r in paused.value.requests] == ["add"] and len(model.requests) == 1  # not called
        call_id = paused.value.requests[0].call_id
        assert bot.resume(paused.value, {call_id: Decision.approve()}) == "3.0"
    with mcp_tools(SERVER_ARGV, only=["add"], requires_approval=True) as tools:
        assert [t.requires_approval for t in tools] == [True]


@pytest.mark.parametrize("wrong, problem", [
    (["nope"], r"requires_approval names 'nope', not among its tools kept: add"),
    ("add", r"not the string 'add' \(write \['add'\]\)"),
])
def test_tls_mcp_180_requires_approval_naming_no_kept_tool_is_a_typed_error(wrong, problem):
    with pytest.raises(ToolDefinitionError, match=problem):
        mcp_tools(SERVER_ARGV, only=["add"], requires_approval=wrong)
