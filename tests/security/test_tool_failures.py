"""A tool's failure is that call's failure, whatever it raises (HRD-SEC-010..050).

``SystemExit`` (argparse inside a tool), ``GeneratorExit``, ``StopIteration`` and other base exceptions become the
call's error, shown to the model and counted in ``max_errors``; they never end another run, a whole ``asyncio.run``
or the process. ``KeyboardInterrupt`` and ``asyncio.CancelledError`` still propagate.
"""

from __future__ import annotations

import argparse
import asyncio

import pytest

from llamabot import AsyncAgentBot, ScriptedModel, tool
from llamabot.agents.nodes import ToolExecutionError
from llamabot.errors import ToolCrashedError
from llamabot.models.scripted import tool_call
from llamabot.tools.call import ainvoke_tool, invoke_tool
from tests.security.agent_scenarios import agent, call_then_echo, results_of_this_run

#: Seconds a run may take before the test calls it hung.
HANG_S = 10


@tool
def parse_flags(flags: str) -> str:
    """Parse command-line flags (argparse exits on bad ones)."""
    parser = argparse.ArgumentParser(prog="parse_flags", add_help=False)
    parser.add_argument("--n", type=int, required=True)
    return str(parser.parse_args(flags.split()).n)


class Interrupt(BaseException):
    """A BaseException of no special meaning to Python."""


def raiser(kind: type[BaseException]):
    def raise_it() -> str:
        raise kind("from the tool")
    return raise_it


def async_raiser(kind: type[BaseException]):
    async def raise_it() -> str:
        await asyncio.sleep(0)
        raise kind("from the tool")
    return raise_it


BASE_EXCEPTIONS = [SystemExit, GeneratorExit, StopIteration, Interrupt]
#: The ways an attempt runs a tool: sync in this thread, sync in a daemon thread (timeout), sync in the pool
#: (async run), sync in a daemon thread (async run with timeout), coroutine awaited, coroutine in its own task.
PATHS = {
    "sync": (False, None, False),
    "sync-timeout": (False, 5.0, False),
    "thread": (False, None, True),
    "thread-timeout": (False, 5.0, True),
    "coroutine": (True, None, True),
    "coroutine-timeout": (True, 5.0, True),
}


def crashing_tool(kind: type[BaseException], path: str):
    is_async, timeout, _ = PATHS[path]
    func = async_raiser(kind) if is_async else raiser(kind)
    func.__name__ = "crashes"
    return tool(timeout=timeout)(func) if timeout else tool(func)


def test_hrd_sec_010_system_exit_in_a_tool_is_that_calls_failure():
    bot, model = agent([parse_flags], call_then_echo("parse_flags", flags="--n not-a-number"))
    answer = bot("parse my flags")
    assert answer.startswith("Error: ToolCrashedError: tool 'parse_flags' raised SystemExit: 2")
    assert len(model.requests) == 2  # the model saw the error and answered: the run went on


def test_hrd_sec_010_a_tool_that_keeps_exiting_counts_against_max_errors():
    bot, _ = agent([parse_flags], lambda request: tool_call("parse_flags", flags="--bad"), max_errors=2)
    with pytest.raises(ToolExecutionError, match="SystemExit") as raised:
        bot("parse my flags")
    assert raised.value.tool == "parse_flags"


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("kind", BASE_EXCEPTIONS, ids=lambda k: k.__name__)
def test_hrd_sec_020_every_base_exception_on_every_path_is_a_typed_failure(kind, path):
    crashes = crashing_tool(kind, path)
    in_async_run = PATHS[path][2]
    call = ainvoke_tool(crashes, {}) if in_async_run else None
    outcome = asyncio.run(asyncio.wait_for(call, HANG_S)) if in_async_run else invoke_tool(crashes, {})
    if kind is StopIteration and PATHS[path][0]:  # Python itself turns it into a RuntimeError in a coroutine
        assert outcome.error == "RuntimeError: coroutine raised StopIteration"
        return
    assert type(outcome.exception) is ToolCrashedError
    assert isinstance(outcome.exception, Exception) and type(outcome.exception.original) is kind
    assert outcome.error == f"ToolCrashedError: tool 'crashes' raised {kind.__name__}: from the tool; a tool " \
                            "should raise an Exception (this call failed; the run goes on)"
    with pytest.raises(ToolCrashedError):
        outcome.unwrap()  # what Tool.invoke raises: a typed error, never the tool's SystemExit


def test_hrd_sec_030_a_tool_exiting_in_some_of_20_concurrent_runs_ends_only_those_calls():
    @tool
    def exit_if_even(n: int) -> str:
        """Blocking tool (a worker thread) that exits on even numbers."""
        if n % 2 == 0:
            raise SystemExit(f"{n} is even")
        return f"{n} is odd"

    @tool(timeout=5.0)
    async def aexit_if_even(n: int) -> str:
        """Coroutine tool with a timeout (a task of its own) that exits on even numbers."""
        if n % 2 == 0:
            raise SystemExit(f"{n} is even")
        return f"{n} is odd"

    def respond(request):
        seen = results_of_this_run(request)
        n = int(request.last_user_text.split()[-1])
        if not seen:
            return tool_call("exit_if_even" if n % 4 < 2 else "aexit_if_even", n=n)
        return tool_call("respond_to_user", response=seen[-1]["content"])

    bot = AsyncAgentBot([exit_if_even, aexit_if_even], model=ScriptedModel(responder=respond))

    async def all_runs():
        return await asyncio.wait_for(asyncio.gather(*(bot.arun(f"check {n}") for n in range(20))), HANG_S)

    answers = asyncio.run(all_runs())  # before: the first SystemExit ended asyncio.run (and the other 19 runs)
    for n, answer in enumerate(answers):
        if n % 2:
            assert answer == f"{n} is odd"
        else:
            assert answer.startswith("Error: ToolCrashedError: tool ") and f"raised SystemExit: {n} is even" in answer


def test_hrd_sec_040_keyboard_interrupt_in_a_tool_still_ends_the_run():
    with pytest.raises(KeyboardInterrupt):
        invoke_tool(tool(raiser(KeyboardInterrupt)), {})
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(ainvoke_tool(tool(timeout=5.0)(raiser(KeyboardInterrupt)), {}))


def test_hrd_sec_040_cancellation_raised_in_a_coroutine_tool_still_propagates():
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(ainvoke_tool(tool(async_raiser(asyncio.CancelledError)), {}))


@pytest.mark.parametrize("timeout", [None, 5.0], ids=["pool", "daemon-thread"])
def test_hrd_sec_050_a_sync_tool_raising_stop_iteration_does_not_hang_an_async_run(timeout):
    @tool(timeout=timeout)
    def next_item(items: list[int]) -> int:
        """The first item (``next`` on an empty iterator raises StopIteration)."""
        return next(iter(items))

    bot = AsyncAgentBot([next_item], model=ScriptedModel(responder=call_then_echo("next_item", items=[])))
    # before: the executor's future could not carry StopIteration into the coroutine, and the run waited forever
    answer = asyncio.run(asyncio.wait_for(bot.arun("first of nothing"), HANG_S))
    assert answer.startswith("Error: ToolCrashedError: tool 'next_item' raised StopIteration")
