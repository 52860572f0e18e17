"""MCP servers that hang, send broken or oversized definitions, crafted patterns, huge results, or leave
processes behind (TLS-MCP-120..170). The servers are real: tests/fixtures/mcp_hostile_server.py over stdio."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from llamabot.errors import SettingsError, ToolDefinitionError
from llamabot.tools.call import ainvoke_tool, invoke_tool
from llamabot.tools.mcp import MCPLimits, MCPTimeoutError, MCPTools, mcp_tools
from tests.fixtures.mcp_helpers import gone_within, is_running

HOSTILE = [sys.executable, str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_hostile_server.py")]


def by_name(tools: MCPTools) -> dict:
    return {t.name: t for t in tools}


# -- TLS-MCP-120: a call the server never answers ends at the call timeout -----------------------------------------


def test_tls_mcp_120_the_call_timeout_defaults_to_60_s_and_reads_llamabot_mcp_timeout(monkeypatch):
    monkeypatch.delenv("LLAMABOT_MCP_TIMEOUT", raising=False)
    assert MCPLimits.from_env().call_timeout == 60.0
    monkeypatch.setenv("LLAMABOT_MCP_TIMEOUT", "2.5")
    assert MCPLimits.from_env().call_timeout == 2.5
    assert MCPLimits.from_env(None).call_timeout is None  # mcp_tools(call_timeout=None): no limit
    monkeypatch.setenv("LLAMABOT_MCP_TIMEOUT", "1_0")
    with pytest.raises(SettingsError, match=r"\$LLAMABOT_MCP_TIMEOUT="):
        MCPLimits.from_env()
    with pytest.raises(SettingsError, match=r"call_timeout=-1"):
        mcp_tools(HOSTILE, call_timeout=-1)


async def test_tls_mcp_120_a_hung_server_call_times_out_typed_and_the_session_goes_on(monkeypatch):
    monkeypatch.setenv("LLAMABOT_MCP_TIMEOUT", "1")
    with mcp_tools(HOSTILE, only=["hang", "add"]) as tools:
        hang, add = by_name(tools)["hang"], by_name(tools)["add"]
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError, match=r"tool 'hang' of MCP server .* did not answer within 1 s") as err:
            hang.func()
        assert time.monotonic() - started < 10 and isinstance(err.value, TimeoutError)
        outcome = await ainvoke_tool(hang, {})
        assert outcome.error.startswith("MCPTimeoutError: tool 'hang'")  # shown to the model; the run goes on
        assert invoke_tool(add, {"a": 1, "b": 2}).value == 3.0  # the server still answers


def test_tls_mcp_120_the_keyword_overrides_the_variable(monkeypatch):
    monkeypatch.setenv("LLAMABOT_MCP_TIMEOUT", "600")
    with mcp_tools(HOSTILE, only=["hang"], call_timeout=0.5) as tools:
        assert "within 0.5 s" in invoke_tool(tools[0], {}).error


# -- TLS-MCP-130: a $ref that resolves nowhere is refused when the tools are listed ---------------------------------


def test_tls_mcp_130_an_unresolvable_ref_is_a_typed_error_at_load_naming_server_and_tool():
    with pytest.raises(ToolDefinitionError, match=r"MCP server '.*mcp_hostile_server.py': tool 'lookup': the "
                                                  r"parameters schema cannot be used: at properties/key: \$ref "
                                                  r"'#/\$defs/Missing' does not resolve"):
        mcp_tools(HOSTILE, only=["lookup", "add"])


# -- TLS-MCP-140: oversized descriptions and schemas are refused -----------------------------------------------------


def test_tls_mcp_140_a_description_over_the_limit_is_refused_naming_the_tool():
    with pytest.raises(ToolDefinitionError, match=r"tool 'chatty': its description has 1080000 characters, over "
                                                  r"the limit of 10000 .*only="):
        mcp_tools(HOSTILE, only=["add", "chatty"])


def test_tls_mcp_140_a_schema_over_the_limit_is_refused_naming_the_tool(monkeypatch):
    with pytest.raises(ToolDefinitionError, match=r"tool 'sprawling': its input schema has \d+ characters as "
                                                  r"JSON, over the limit of 100000"):
        mcp_tools(HOSTILE, only=["sprawling"])
    monkeypatch.setenv("LLAMABOT_MCP_MAX_SCHEMA_CHARS", "1000000")  # the limit is a setting
    with mcp_tools(HOSTILE, only=["sprawling"]) as tools:
        assert len(tools[0].parameters["properties"]) == 4_000


# -- TLS-MCP-150: a crafted pattern cannot stall the check of the arguments -----------------------------------------


async def test_tls_mcp_150_an_exponential_pattern_is_checked_within_its_budget():
    with mcp_tools(HOSTILE, only=["check"]) as tools:
        check = tools[0]
        started = time.monotonic()
        outcome = invoke_tool(check, {"word": "a" * 64 + "b"})  # re.search would take longer than the universe
        assert time.monotonic() - started < 2
        assert "took more than 0.25 s" in outcome.error and outcome.error.startswith("ToolArgumentsError")
        assert "does not match" in (await ainvoke_tool(check, {"word": "b"})).error
        assert invoke_tool(check, {"word": "aaaa"}).value == "aaaa"


# -- TLS-MCP-160: closing ends the server's whole process group ------------------------------------------------------


def test_tls_mcp_160_a_child_that_ignores_sigterm_does_not_outlive_close():
    tools = mcp_tools(HOSTILE, only=["spawn_stubborn"])
    child = invoke_tool(tools[0], {}).value
    assert is_running(child)
    tools.close()
    assert gone_within(child, 10), f"process {child} of the server survived close()"


# -- TLS-MCP-170: a huge result is dropped as it is read, not held --------------------------------------------------


def test_tls_mcp_170_a_result_over_the_message_limit_is_an_error_shown_to_the_model(monkeypatch):
    monkeypatch.setenv("LLAMABOT_MCP_MAX_MESSAGE_BYTES", str(4 << 20))  # over the 1.5 MB listing
    with mcp_tools(HOSTILE, only=["blob", "add"]) as tools:
        blob, add = by_name(tools)["blob"], by_name(tools)["add"]
        assert len(invoke_tool(blob, {"megabytes": 0}).value) == 0
        started = time.monotonic()
        outcome = invoke_tool(blob, {"megabytes": 64})
        assert time.monotonic() - started < 30
        assert outcome.error.startswith("MCPToolError: MCP error -32090: the server's response was over 4194304 "
                                        "bytes and was dropped unread")
        assert invoke_tool(add, {"a": 2, "b": 2}).value == 4.0  # the session is still in step
