"""What the model is shown of a tool's result (HRD-SEC-090, 100): a value that cannot be made text is that call's
error; a huge value is cut, with a marker, to the tool-result limit, and the caller keeps it whole."""

from __future__ import annotations

import asyncio

import pytest

from llamabot import tool
from llamabot.errors import SettingsError, ToolResultError
from llamabot.models.messages import TOOL_RESULT_CHARS, tool_result_chars, tool_result_text
from tests.security.agent_scenarios import agent, call_then_echo

BIG = 50 * 1024 * 1024  # 50 MB


class Unprintable:
    """A value whose ``__str__`` and ``__repr__`` both raise."""

    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


@tool
def unprintable() -> object:
    """Return a value that cannot be shown."""
    return Unprintable()


@tool
def big() -> str:
    """Return 50 MB of text."""
    return "x" * BIG


@pytest.mark.parametrize("run", ["sync", "async"])
def test_hrd_sec_090_a_result_that_cannot_be_shown_is_that_calls_error_shown_to_the_model(run):
    bot, model = agent([unprintable], call_then_echo("unprintable"))
    answer = bot("show it") if run == "sync" else asyncio.run(bot.arun("show it"))
    assert answer == (
        "Error: ToolResultError: the result of tool 'unprintable' (a Unprintable) cannot be shown to the model: "
        "making it text raised RuntimeError; return a str, or data that JSON, str() or repr() can write")
    assert len(model.requests) == 2  # the run went on: the model saw the error and answered


def test_hrd_sec_090_a_value_with_a_broken_str_is_shown_by_its_repr():
    class OnlyRepr:
        def __str__(self) -> str:
            raise ValueError("broken")

        def __repr__(self) -> str:
            return "OnlyRepr()"

    assert tool_result_text(OnlyRepr(), "t") == "OnlyRepr()"
    with pytest.raises(ToolResultError, match="'t'"):
        tool_result_text(Unprintable(), "t")


@pytest.mark.parametrize("run", ["sync", "async"])
def test_hrd_sec_100_a_50_mb_result_reaches_the_model_cut_to_the_limit_and_the_trace_keeps_it_whole(run):
    bot, model = agent([big], call_then_echo("big"))
    answer = bot("big one") if run == "sync" else asyncio.run(bot.arun("big one"))
    shown = [m for m in model.requests[-1].messages if m["role"] == "tool"][-1]["content"]
    kept = TOOL_RESULT_CHARS - len(f"... [truncated: {BIG} characters, showing the first {TOOL_RESULT_CHARS}]")
    assert shown == "x" * kept + f"... [truncated: {BIG} characters, showing the first {kept}]"
    assert len(shown) <= TOOL_RESULT_CHARS  # the marker is within the limit
    assert answer == shown
    recorded = [s for s in bot.last_trace.spans if s.category == "tool_call" and s.name == "big"]
    assert len(recorded[0].attributes["result"]) == BIG  # the caller's record keeps the real value


def test_hrd_sec_100_a_terminal_tools_whole_value_is_the_runs_result():
    @tool(loopback_name=None)
    def finish() -> str:
        """Answer with 50 MB."""
        return "y" * BIG

    bot, _ = agent([finish], call_then_echo("finish"))
    assert len(bot("finish")) == BIG


def test_hrd_sec_100_the_limit_is_a_setting(monkeypatch):
    monkeypatch.setenv("LLAMABOT_TOOL_RESULT_CHARS", "1000")
    tool_result_chars.cache_clear()  # read once per process, on first use
    try:
        bot, model = agent([big], call_then_echo("big"))
        assert bot("big one") == "x" * 940 + f"... [truncated: {BIG} characters, showing the first 940]"
        monkeypatch.setenv("LLAMABOT_TOOL_RESULT_CHARS", "lots")
        tool_result_chars.cache_clear()
        with pytest.raises(SettingsError, match="LLAMABOT_TOOL_RESULT_CHARS"):
            tool_result_text("text", "t")
    finally:
        monkeypatch.delenv("LLAMABOT_TOOL_RESULT_CHARS")
        tool_result_chars.cache_clear()


def test_hrd_sec_100_an_error_message_of_50_mb_is_cut_the_same_way():
    @tool
    def loud() -> str:
        """Fail with a huge message."""
        raise ValueError("z" * BIG)

    bot, model = agent([loud], call_then_echo("loud"))
    shown = bot("fail loudly")
    assert len(shown) <= TOOL_RESULT_CHARS and shown.startswith("Error: ValueError: zzz")
    assert shown.endswith(f"[truncated: {len('Error: ValueError: ') + BIG} characters, showing the first 99938]")
