"""End to end on the real embedded model (llama.cpp in-process). Few and focused; they run in CI.

They are never skipped: without the ``local`` extra the ``local_model_name`` fixture fails with the
install command.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import BaseModel

from llamabot import AsyncToolBot, SimpleBot, StructuredBot, ToolBot, tool

pytestmark = pytest.mark.local_model


class City(BaseModel):
    name: str
    country: str
    population_millions: float


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first term.
        b: The second term.
    """
    return a + b


def test_mdl_local_100_structured_output_is_grammar_constrained_and_validates(local_model_name):
    bot = StructuredBot("Extract the city described by the user.", City, model=local_model_name)
    city = bot("Paris is the capital of France and has about 2.1 million inhabitants.")
    assert isinstance(city, City)
    assert city.name == "Paris" and city.country == "France"
    assert 1.0 <= city.population_millions <= 3.0
    assert bot.last_trace.of_kind("model_call")[0].attributes["reply"].usage.prompt_tokens > 0


def test_mdl_local_110_forced_tool_call_has_valid_arguments(local_model_name):
    bot = ToolBot("Call the tool that answers the question.", model=local_model_name, tools=[add, multiply])
    reply = bot("What is 23 times 19?")
    [call] = reply.tool_calls
    assert call.ok, call.error
    assert call.name == "multiply"
    assert sorted(call.arguments.values()) == [19.0, 23.0]
    assert multiply(**call.arguments) == 437.0


def test_mdl_local_120_named_tool_choice_and_shared_model_under_concurrency(local_model_name):
    from llamabot.models.local.runtime import loaded_model, loaded_models

    async def scenario():
        bot = AsyncToolBot("Call the tool.", model=local_model_name, tools=[add, multiply], tool_choice="add")
        ticks = 0

        async def heartbeat():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        beat = asyncio.create_task(heartbeat())
        started = time.perf_counter()
        replies = await asyncio.gather(bot("Add 2 and 3."), bot("Add 40 and 2."))
        elapsed = time.perf_counter() - started
        beat.cancel()
        return replies, ticks, elapsed

    replies, ticks, elapsed = asyncio.run(scenario())
    assert [r.first.name for r in replies] == ["add", "add"]
    assert all(r.first.ok for r in replies)
    assert {tuple(sorted(r.first.arguments.values())) for r in replies} == {(2.0, 3.0), (2.0, 40.0)}
    assert ticks >= elapsed / 0.01 * 0.5  # the event loop kept running while llama.cpp worked
    shared = loaded_model(local_model_name.split("/", 1)[1])
    assert [m.path for m in loaded_models()].count(shared.path) == 1  # one loaded model per file, shared


def test_mdl_local_130_streaming_and_usage(local_model_name):
    pieces: list[str] = []
    bot = SimpleBot("Answer with digits only.", model=local_model_name, stream_target=pieces.append, max_tokens=16)
    reply = bot("Count from 1 to 5, separated by commas.")
    assert len(pieces) > 1 and "".join(pieces) == reply.content
    assert "1" in reply.content and "5" in reply.content
    assert reply.usage.prompt_tokens > 0 and 0 < reply.usage.completion_tokens <= 16


def test_mdl_local_140_stop_sequences_and_temperature_are_honoured(local_model_name):
    bot = SimpleBot("Answer with digits only.", model=local_model_name, stop=["3"], temperature=0.0, max_tokens=24)
    first = bot("Count from 1 to 5, separated by commas.").content
    assert "1" in first and "3" not in first and "5" not in first
    assert bot("Count from 1 to 5, separated by commas.").content == first  # temperature 0 is deterministic
