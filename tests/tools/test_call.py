"""Calling a tool: one logic for sync and async runs, with validation, timeouts and retries (TOOL-CALL-*)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

from llamabot.errors import ToolArgumentsError, ToolDefinitionError
from llamabot.models.exchange import arun_exchange, run_exchange, using_steps
from llamabot.models.reply import ModelRequest
from llamabot.tools import Retry, tool
from llamabot.tools.call import (
    Sleep,
    ToolAttempt,
    ToolOutcome,
    ainvoke_tool,
    invoke_tool,
    tool_call,
)
from llamabot.tools.tool import as_tool

NO_JITTER = {"jitter_s": 0.0}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


@tool
def lookup(name: str, _globals_dict: dict[str, Any] | None = None) -> Any:
    """Look a name up in the caller's variables."""
    return (_globals_dict or {}).get(name, "<missing>")


@tool
async def slow_add(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    await asyncio.sleep(0)
    return a + b


def flaky_tool(failures: int, calls: list[int], **options: Any):
    """A tool that raises ``ConnectionError`` ``failures`` times, then returns 42; ``calls`` counts attempts."""

    @tool(**options)
    def flaky() -> int:
        """Fails a few times, then works."""
        calls.append(len(calls) + 1)
        if len(calls) <= failures:
            raise ConnectionError(f"attempt {len(calls)} failed")
        return 42

    return flaky


def drive_without_sleeping(exchange) -> tuple[ToolOutcome, list[Any]]:
    """Run a tool-call exchange by hand: attempts run, sleeps are only recorded. Returns (outcome, requests)."""
    requests: list[Any] = []
    try:
        request = next(exchange)
        while True:
            requests.append(request)
            request = exchange.send(request.run() if isinstance(request, ToolAttempt) else None)
    except StopIteration as stop:
        return stop.value, requests


# --- TOOL-CALL-010: one logic, two drivers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("the_tool", "arguments"),
    [(add, {"a": 2, "b": "3"}), (divide, {"a": 1, "b": 0}), (add, {"a": "x"}), (lookup, '{"name": "k"}')],
)
async def test_tool_call_010_sync_and_async_runs_give_equal_outcomes(the_tool, arguments):
    context = {"globals_dict": {"k": "v"}}
    sync_outcome = invoke_tool(the_tool, arguments, context)
    async_outcome = await ainvoke_tool(the_tool, arguments, context)
    assert sync_outcome == async_outcome
    assert sync_outcome.duration_s >= 0 and async_outcome.duration_s >= 0


@pytest.mark.parametrize(
    ("the_tool", "arguments", "validated"),
    [(add, {"a": 2, "b": "3"}, False), (divide, {"a": 1, "b": 0}, True), (add, {"a": "x"}, False),
     (lookup, {"name": "k"}, True), (slow_add, {"a": 1, "b": 2}, True)],
)
async def test_tool_call_010_invoking_a_tool_equals_the_driven_exchange(the_tool, arguments, validated):
    """invoke_tool/ainvoke_tool are the exchange driven: the outcome is the one the drivers give."""
    the_tool = as_tool(the_tool)
    context = {"globals_dict": {"k": "v"}}
    assert invoke_tool(the_tool, arguments, context, validated=validated) == run_exchange(
        tool_call(the_tool, arguments, context, validated=validated))
    assert await ainvoke_tool(the_tool, arguments, context, validated=validated) == await arun_exchange(
        tool_call(the_tool, arguments, context, validated=validated))


async def test_tool_call_010_inside_a_step_runner_every_call_is_still_handed_to_the_runner():
    """A durable run's runner records each attempt."""
    seen: list[Any] = []

    class Recording:
        def step(self, request, model, on_token):
            seen.append(request)
            return request.run()

        async def astep(self, request, model, on_token):
            seen.append(request)
            return await request.arun()

    the_tool = as_tool(add)
    with using_steps(Recording()):
        assert invoke_tool(the_tool, {"a": 1, "b": 2}, validated=True).value == 3
        assert (await ainvoke_tool(the_tool, {"a": 2, "b": 2}, validated=True)).value == 4
    assert [type(r) for r in seen] == [ToolAttempt, ToolAttempt]


def test_tool_call_010_a_successful_call_has_its_value_and_one_attempt():
    assert invoke_tool(add, {"a": 2, "b": 3}) == ToolOutcome(value=5, error=None, attempts=1)


def test_tool_call_010_a_failing_tool_is_an_error_outcome_in_the_form_the_model_sees():
    outcome = invoke_tool(divide, {"a": 1, "b": 0})
    assert outcome.error == "ZeroDivisionError: float division by zero"
    assert isinstance(outcome.exception, ZeroDivisionError) and outcome.attempts == 1 and not outcome.ok


def test_tool_call_010_the_exchange_yields_tool_attempts_and_no_model_requests():
    outcome, requests = drive_without_sleeping(tool_call(add, {"a": 1, "b": 1}))
    assert outcome.value == 2
    assert [type(r) for r in requests] == [ToolAttempt]
    assert not any(isinstance(r, ModelRequest) for r in requests)


async def test_tool_call_010_the_drivers_need_no_model_for_a_tool_call():
    assert run_exchange(tool_call(add, {"a": 1, "b": 2})).value == 3
    assert (await arun_exchange(tool_call(add, {"a": 1, "b": 2}), None)).value == 3


def test_tool_call_010_a_model_request_without_a_model_is_a_clear_error():
    def asks_the_model():
        yield ModelRequest(model="m", messages=[])

    with pytest.raises(TypeError, match="no model"):
        run_exchange(asks_the_model())


def test_tool_call_010_a_yielded_object_that_is_no_request_is_a_clear_error():
    def yields_junk():
        yield {"not": "a request"}

    with pytest.raises(TypeError, match="neither a ModelRequest nor an effect"):
        run_exchange(yields_junk())


# --- TOOL-CALL-020: arguments ---------------------------------------------------------------------------


def test_tool_call_020_invalid_arguments_are_an_error_outcome_and_the_function_never_runs():
    calls: list[int] = []

    @tool
    def record(a: int) -> None:
        """Record a."""
        calls.append(a)

    outcome, requests = drive_without_sleeping(tool_call(record, {"a": "three"}))
    assert requests == [] and calls == [] and outcome.attempts == 0
    assert outcome.error.startswith("ToolArgumentsError: invalid arguments for tool 'record': a: ")
    assert isinstance(outcome.exception, ToolArgumentsError) and outcome.exception.errors[0].startswith("a:")


def test_tool_call_020_invalid_arguments_are_not_retried():
    calls: list[int] = []
    outcome = invoke_tool(flaky_tool(0, calls, retries=3), {"unexpected": 1})
    assert outcome.attempts == 0 and calls == [] and outcome.error.startswith("ToolArgumentsError")


def test_tool_call_020_hidden_parameters_are_injected_from_the_context():
    assert invoke_tool(lookup, {"name": "x"}, {"globals_dict": {"x": 41}}).value == 41
    assert invoke_tool(lookup, {"name": "x"}).value == "<missing>"


def test_tool_call_020_validated_arguments_are_only_completed_with_hidden_ones():
    validated = lookup.tool.validate({"name": "x"})
    assert invoke_tool(lookup, validated, {"globals_dict": {"x": 1}}, validated=True).value == 1
    assert invoke_tool(add, {"a": "2", "b": 3}, validated=True).error.startswith("TypeError")  # not validated again
    assert invoke_tool(add, {"a": 2, "b": 3}, validated=True).value == 5


def test_tool_call_020_a_missing_required_hidden_parameter_is_an_error_outcome():
    @tool
    def needs_memory(_memory: list) -> int:
        """Count the messages."""
        return len(_memory)

    outcome = invoke_tool(needs_memory, {})
    assert outcome.error.startswith("ToolDefinitionError: tool 'needs_memory' needs hidden parameter '_memory'")
    assert invoke_tool(needs_memory, {}, {"memory": [1, 2]}).value == 2


# --- TOOL-CALL-030: async tools in sync runs -----------------------------------------------------------


def test_tool_call_030_an_async_tool_in_a_sync_run_is_an_error_outcome_pointing_to_the_async_way():
    outcome = invoke_tool(slow_add, {"a": 1, "b": 2})
    assert outcome.error.startswith("ToolDefinitionError: tool 'slow_add' is async")
    assert "ainvoke" in outcome.error and "AsyncAgentBot" in outcome.error


def test_tool_call_030_an_async_tool_in_a_sync_run_is_not_retried():
    outcome, requests = drive_without_sleeping(tool_call(slow_add, {"a": 1, "b": 2}, retry=Retry(attempts=3)))
    assert outcome.attempts == 1 and len(requests) == 1


async def test_tool_call_030_async_runs_await_coroutine_tools():
    assert (await ainvoke_tool(slow_add, {"a": 1, "b": 2})).value == 3


# --- TOOL-CALL-040: timeouts ------------------------------------------------------------------------------


def test_tool_call_040_a_blocking_sync_tool_times_out_in_a_sync_run():
    @tool(timeout=0.05)
    def hangs() -> str:
        """Blocks far longer than its timeout."""
        time.sleep(2)
        return "late"

    started = time.perf_counter()
    outcome = invoke_tool(hangs)
    assert time.perf_counter() - started < 1.0
    assert outcome.error == "TimeoutError: tool 'hangs' did not finish within 0.05 s"
    assert isinstance(outcome.exception, TimeoutError) and outcome.attempts == 1


async def test_tool_call_040_a_blocking_sync_tool_times_out_in_an_async_run():
    @tool(timeout=0.05)
    def hangs() -> str:
        """Blocks far longer than its timeout."""
        time.sleep(2)
        return "late"

    started = time.perf_counter()
    outcome = await ainvoke_tool(hangs)
    assert time.perf_counter() - started < 1.0
    assert outcome.error == "TimeoutError: tool 'hangs' did not finish within 0.05 s"


async def test_tool_call_040_a_coroutine_tool_times_out_and_is_cancelled():
    cancelled = asyncio.Event()

    @tool(timeout=0.05)
    async def waits() -> str:
        """Waits far longer than its timeout."""
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    outcome = await ainvoke_tool(waits)
    assert outcome.error == "TimeoutError: tool 'waits' did not finish within 0.05 s"
    await asyncio.wait_for(cancelled.wait(), 1.0)


async def test_tool_call_040_a_timeout_error_raised_by_the_tool_itself_stays_its_own():
    @tool(timeout=5)
    async def own_timeout() -> str:
        """Its own client timed out."""
        raise TimeoutError("upstream API timed out")

    assert (await ainvoke_tool(own_timeout)).error == "TimeoutError: upstream API timed out"


def test_tool_call_040_a_tool_that_finishes_in_time_gives_its_value():
    @tool(timeout=5.0)
    def quick(x: int) -> int:
        """Returns at once."""
        return x

    assert invoke_tool(quick, {"x": 3}).value == 3


def test_tool_call_040_the_call_may_override_the_tools_timeout():
    @tool
    def naps() -> str:
        """Sleeps 0.5 s."""
        time.sleep(0.5)
        return "done"

    assert invoke_tool(naps, timeout=0.02).error == "TimeoutError: tool 'naps' did not finish within 0.02 s"


# --- TOOL-CALL-050: retries -------------------------------------------------------------------------------


def test_tool_call_050_a_flaky_tool_is_retried_until_it_succeeds():
    calls: list[int] = []
    outcome = invoke_tool(flaky_tool(2, calls, retry=Retry(attempts=3, backoff_s=0.0)))
    assert outcome == ToolOutcome(value=42, error=None, attempts=3) and calls == [1, 2, 3]


def test_tool_call_050_retries_stop_after_the_last_attempt_with_the_last_error():
    calls: list[int] = []
    outcome = invoke_tool(flaky_tool(5, calls, retries=2, timeout=None))  # retries=2: three attempts in all
    assert calls == [1, 2, 3] and outcome.attempts == 3
    assert outcome.error == "ConnectionError: attempt 3 failed"


def test_tool_call_050_backoff_waits_are_yielded_as_sleep_effects_growing_exponentially():
    calls: list[int] = []
    policy = Retry(attempts=4, backoff_s=0.5, multiplier=2.0, **NO_JITTER)
    outcome, requests = drive_without_sleeping(tool_call(flaky_tool(3, calls), retry=policy))
    assert outcome.value == 42 and outcome.attempts == 4
    assert [r.seconds for r in requests if isinstance(r, Sleep)] == [0.5, 1.0, 2.0]
    assert [type(r).__name__ for r in requests] == ["ToolAttempt", "Sleep"] * 3 + ["ToolAttempt"]


def test_tool_call_050_backoff_is_capped_and_jitter_stays_within_its_bound():
    calls: list[int] = []
    policy = Retry(attempts=6, backoff_s=1.0, multiplier=3.0, max_backoff_s=2.0, jitter_s=0.25)
    _, requests = drive_without_sleeping(tool_call(flaky_tool(9, calls), retry=policy))
    waits = [r.seconds for r in requests if isinstance(r, Sleep)]
    assert len(waits) == 5 and 1.0 <= waits[0] <= 1.25 and all(2.0 <= w <= 2.25 for w in waits[1:])


def test_tool_call_050_only_the_listed_exception_types_are_retried():
    calls: list[int] = []
    outcome = invoke_tool(flaky_tool(2, calls, retry=Retry(attempts=3, backoff_s=0, retry_on=(TimeoutError,))))
    assert outcome.attempts == 1 and outcome.error == "ConnectionError: attempt 1 failed"


def test_tool_call_050_a_timeout_is_retried():
    calls: list[int] = []

    @tool(timeout=0.05, retry=Retry(attempts=2, backoff_s=0))
    def slow_then_fast() -> str:
        """Hangs on the first attempt only."""
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.5)
        return "ok"

    outcome = invoke_tool(slow_then_fast)
    assert outcome.value == "ok" and outcome.attempts == 2


async def test_tool_call_050_async_backoff_sleeps_do_not_block_the_event_loop():
    calls: list[int] = []
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    ticking = asyncio.ensure_future(ticker())
    try:
        outcome = await ainvoke_tool(flaky_tool(2, calls, retry=Retry(attempts=3, backoff_s=0.1, multiplier=1.0, **NO_JITTER)))
    finally:
        ticking.cancel()
    assert outcome.value == 42 and outcome.attempts == 3 and outcome.duration_s >= 0.2
    assert len(ticks) >= 10  # the loop kept running during the 0.2 s of backoff


def test_tool_call_050_a_tool_without_a_policy_runs_once():
    calls: list[int] = []
    assert invoke_tool(flaky_tool(1, calls)).attempts == 1 and calls == [1]


# --- TOOL-CALL-060: sync tools off the event loop ------------------------------------------------------


async def test_tool_call_060_ten_concurrent_blocking_tools_overlap_in_an_async_run():
    @tool
    def blocking(x: int) -> int:
        """Blocks for 0.2 s."""
        time.sleep(0.2)
        return x

    started = time.perf_counter()
    outcomes = await asyncio.gather(*(ainvoke_tool(blocking, {"x": i}) for i in range(10)))
    assert time.perf_counter() - started < 1.0  # ten in sequence would take 2 s
    assert [o.value for o in outcomes] == list(range(10))


async def test_tool_call_060_a_sync_tool_in_an_async_run_runs_off_the_loop_thread_and_sees_the_context():
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")

    @tool
    def where() -> tuple[bool, str]:
        """Which thread, which context."""
        return threading.current_thread() is threading.main_thread(), marker.get()

    marker.set("run-1")
    assert (await ainvoke_tool(where)).value == (False, "run-1")
    assert (await ainvoke_tool(where, timeout=5)).value == (False, "run-1")
    assert invoke_tool(where, timeout=5).value == (False, "run-1")


async def test_tool_call_060_a_non_blocking_tool_runs_on_the_loop_thread():
    @tool(blocking=False)
    def instant() -> bool:
        """Returns at once."""
        return threading.current_thread() is threading.main_thread()

    assert (await ainvoke_tool(instant)).value is True


# --- TOOL-CALL-070: Tool.invoke / ainvoke and the tool's options ---------------------------------------


def test_tool_call_070_invoke_raises_what_ended_the_call():
    with pytest.raises(ZeroDivisionError):
        invoke_tool(divide, {"a": 1, "b": 0}).unwrap()
    with pytest.raises(ToolArgumentsError):
        invoke_tool(divide, {"a": 1}).unwrap()


async def test_tool_call_070_ainvoke_raises_a_timeout():
    @tool(timeout=0.02)
    async def waits() -> None:
        """Waits too long."""
        await asyncio.sleep(1)

    with pytest.raises(TimeoutError, match="did not finish within 0.02 s"):
        (await ainvoke_tool(waits)).unwrap()


def test_tool_call_070_tool_options_are_kept_on_the_tool():
    @tool(timeout=2, retries=3)
    def fetch() -> str:
        """Fetch something."""
        return "x"

    assert fetch.tool.timeout == 2.0 and fetch.tool.retry == Retry(attempts=4)
    assert add.tool.timeout is None and add.tool.retry is None and add.tool.blocking is True


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "timeout must be a number of seconds > 0"),
        ({"timeout": "2"}, "timeout must be a number of seconds > 0"),
        ({"retries": -1}, "retries must be an int >= 0"),
        ({"retries": 1, "retry": Retry()}, "not both"),
        ({"retry": 3}, "retry must be a llamabot.tools.Retry"),
    ],
)
def test_tool_call_070_invalid_tool_options_are_definition_errors(options, message):
    with pytest.raises(ToolDefinitionError, match=message):

        @tool(**options)
        def fetch() -> str:
            """Fetch something."""
            return "x"


@pytest.mark.parametrize(
    "options", [{"attempts": 0}, {"backoff_s": -1}, {"multiplier": 0.5}, {"retry_on": ("not a type",)}]
)
def test_tool_call_070_an_invalid_retry_policy_is_rejected(options):
    with pytest.raises(ValueError):
        Retry(**options)
