"""The library's debug log (loguru, logger name ``llamabot``): off until the user enables it, then decisions,
tool calls, retries and repairs are logged (AGT-LOG-010/020)."""

from __future__ import annotations

import pytest
from loguru import logger
from pydantic import BaseModel

from llamabot import AgentBot, ScriptedModel, StructuredBot, tool
from llamabot.models.scripted import json_reply, text, tool_call


@pytest.fixture
def lines():
    captured: list[str] = []
    sink = logger.add(lambda message: captured.append(message.record["message"]), level="DEBUG")
    yield captured
    logger.remove(sink)
    logger.disable("llamabot")


def flaky_tool():
    attempts = []

    @tool(retries=2)
    def flaky(x: int) -> int:
        """Fails once, then works.

        Args:
            x: a number.
        """
        attempts.append(x)
        if len(attempts) == 1:
            raise ConnectionError("try again")
        return x

    return flaky


def run_agent():
    model = ScriptedModel([tool_call("flaky", x=3), tool_call("respond_to_user", response="3")])
    return AgentBot(tools=[flaky_tool()], model=model)("q")


def test_agt_log_010_nothing_is_logged_until_the_user_enables_the_llamabot_logger(lines):
    assert run_agent() == "3"
    assert lines == []


def test_agt_log_020_decisions_tool_calls_retries_and_repairs_are_logged_at_debug_level(lines):
    logger.enable("llamabot")
    assert run_agent() == "3"
    assert any(line.startswith("run AgentBot started") for line in lines)
    assert any(line.startswith("decision 1: calls ['flaky']") for line in lines)
    assert any("tool flaky attempt 1 failed" in line and "retrying" in line for line in lines)
    assert any(line.startswith("tool flaky returned 3") for line in lines)

    class Answer(BaseModel):
        value: int

    bot = StructuredBot("Answer.", Answer, model=ScriptedModel([text("not json"), json_reply({"value": 4})]))
    assert bot("q").value == 4
    assert any("Answer: invalid structured output (attempt 1 of 3)" in line for line in lines)
