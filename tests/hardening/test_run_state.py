"""Issue #13, defects 3, 5, 9 and 10: what a run keeps, shows and undoes (HARD-WIN-*, HARD-COMP-*, HARD-EXC-*,
HARD-DEF-*).

Unanswered tool calls (defect 4) are covered where the agent's run model is specified:
``tests/agent/test_run_model.py`` (AGT-RUN-050/055/060) and ``tests/agent/test_behaviour.py`` (AGT-DEC-070).
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from llamabot import AgentBot, ScriptedModel, tool
from llamabot.agents.agent_state import conversation_window
from llamabot.errors import ModelCallError, ToolArgumentsError, excerpt
from llamabot.models.messages import assistant, tool_result, user
from llamabot.models.reply import ModelRequest, ToolCallRequest
from llamabot.models.scripted import malformed_tool_call, tool_call, tool_calls
from llamabot.reasoning.aot import Plan, aexecute_plan, execute_plan, validate_plan
from llamabot.toolkits.calculator import add
from llamabot.tools.defaults import return_object_to_user


def _turn(n_calls: int, prefix: str) -> list[dict]:
    ids = [f"{prefix}{i}" for i in range(n_calls)]
    calls = [ToolCallRequest(i, "add", "{}") for i in ids]
    return [assistant(None, tool_calls=calls), *(tool_result(i, "add", i) for i in ids)]


# -- defect 3: the window keeps the newest turn and all its results ---------------------------------------------


@pytest.mark.parametrize("calls", [8, 9, 20])
def test_hard_win_010_a_turn_with_at_least_history_limit_calls_is_sent_whole(calls):
    memory = [user("q"), *_turn(calls, "c")]
    window = conversation_window(memory, run_start=0, limit=8)
    assert window == memory  # the question, the assistant turn and every one of its results


def test_hard_win_010_older_turns_are_dropped_whole_never_split_from_their_results():
    memory = [user("old"), *_turn(3, "a"), user("q"), *_turn(2, "b"), *_turn(4, "c")]
    window = conversation_window(memory, run_start=5, limit=6)
    assert window == [user("q"), *_turn(4, "c")]  # the 3-message turn before no longer fits: dropped whole
    assert conversation_window(memory, run_start=5, limit=8) == [user("q"), *_turn(2, "b"), *_turn(4, "c")]


def test_hard_win_020_the_agent_sees_all_results_of_a_reply_that_made_history_limit_calls():
    """Regression: with 8 calls and history_limit=8 the next request held only the system and user messages."""
    model = ScriptedModel([tool_calls(*[("add", {"a": i, "b": 1}) for i in range(8)]),
                           tool_call("respond_to_user", response="done")])
    assert AgentBot(tools=[add], model=model, history_limit=8)("add them") == "done"
    last = model.requests[-1].messages
    assert [m["role"] for m in last] == ["system", "user", "assistant", *["tool"] * 8]
    assert [m["content"] for m in last if m["role"] == "tool"] == [f"{i + 1}" for i in range(8)]


# -- defect 5: compensation on cancel; a failed compensator is not "compensated" ------------------------------


def _plan(*atoms: dict, tools: dict) -> Plan:
    return validate_plan(Plan.model_validate({"atoms": list(atoms)}), tools)[0]


async def test_hard_comp_010_cancelling_after_an_atom_completed_compensates_it_and_attaches_the_record():
    undone: list[str] = []

    @tool
    async def book(name: str) -> str:
        """Book something."""
        return f"booked {name}"

    waiting = asyncio.Event()

    @tool
    async def wait(name: str) -> str:
        """Take a long time."""
        waiting.set()
        await asyncio.sleep(10)
        return name

    @tool
    def cancel_booking(name: str) -> str:
        """Undo a booking."""
        undone.append(name)
        return "cancelled"

    tools = {t.tool.name: t.tool for t in (book, wait)}
    plan = _plan({"id": 1, "kind": "tool", "name": "book", "input": {"name": "hotel"}},
                 {"id": 2, "kind": "tool", "name": "book", "input": {"name": "car"}, "dependsOn": [1]},
                 {"id": 3, "kind": "tool", "name": "wait", "input": {"name": "x"}, "dependsOn": [1]},
                 {"id": 4, "kind": "final", "name": "report", "dependsOn": [2, 3]}, tools=tools)
    task = asyncio.ensure_future(aexecute_plan(plan, tools, compensations={"book": cancel_booking.tool}))
    await asyncio.wait_for(waiting.wait(), 5)  # atom 1 done; in the second layer atom 2 done, atom 3 waiting
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    record = info.value.record
    assert undone == ["car", "hotel"]  # both completed bookings undone, newest first (the interrupted layer's too)
    assert record.status == "failed" and record.error == "cancelled"
    assert [record.atoms[i].status for i in (1, 2, 3)] == ["compensated", "compensated", "not_run"]


def test_hard_comp_020_an_atom_whose_compensator_failed_is_not_marked_compensated():
    @tool
    def charge(amount: int) -> int:
        """Charge an amount."""
        return amount

    @tool
    def refund(amount: int) -> str:
        """Refund an amount (the bank is down)."""
        raise ConnectionError("bank down")

    @tool
    def boom(x: int) -> int:
        """Always fails."""
        raise RuntimeError("boom")

    tools = {t.tool.name: t.tool for t in (charge, boom)}
    plan = _plan({"id": 1, "kind": "tool", "name": "charge", "input": {"amount": 5}},
                 {"id": 2, "kind": "tool", "name": "boom", "input": {"x": "<result_of_1>"}},
                 {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]}, tools=tools)
    with pytest.raises(Exception) as info:
        execute_plan(plan, tools, compensations={"charge": refund.tool})
    atom = info.value.record.atoms[1]
    assert atom.status == "ok"  # its effect was not undone
    assert atom.compensation.startswith("refund: failed:") and "bank down" in atom.compensation


# -- defect 9: errors quote a bounded excerpt --------------------------------------------------------------------


def test_hard_exc_010_tool_arguments_errors_quote_a_bounded_excerpt_and_keep_the_whole_arguments():
    raw = '{"a": "' + "x" * 1_000_000
    with pytest.raises(ToolArgumentsError) as info:
        add.tool.validate(raw)
    assert len(str(info.value)) < 600 and "(1000007 chars)" in str(info.value)
    assert info.value.raw_arguments == raw
    assert excerpt("short") == "'short'" and excerpt(10**5000).startswith("<int")


def test_hard_exc_020_a_megabyte_malformed_call_sent_twice_does_not_grow_the_requests():
    """Regression: the error shown to the model embedded the whole arguments (1 MB, then 2 MB, then 4 MB)."""
    huge = '{"a": "' + "x" * 1_000_000
    model = ScriptedModel([malformed_tool_call("add", huge), malformed_tool_call("add", huge),
                           tool_call("respond_to_user", response="ok")])
    assert AgentBot(tools=[add], model=model)("q") == "ok"
    error_sizes = [len(m["content"]) for m in model.requests[-1].messages if m["role"] == "tool"]
    assert len(error_sizes) == 2 and max(error_sizes) < 1000


# -- defect 10: private globals; provider errors as ModelCallError ----------------------------------------------


def test_hard_def_010_return_object_to_user_hides_underscore_names_like_inspect_globals():
    namespace = {"result": 42, "_secret": "token"}
    assert return_object_to_user.tool.func("result", namespace) == 42
    with pytest.raises(KeyError, match="available variables: result"):
        return_object_to_user.tool.func("_secret", namespace)


async def test_hard_def_020_provider_errors_reach_the_caller_as_model_call_error_with_the_cause():
    """Through the real LiteLLM (a scripted custom provider that raises), sync and async."""
    from llamabot.models.litellm_model import LiteLLMModel
    from llamabot.models.scripted_provider import register_scripted_provider

    name = register_scripted_provider(ScriptedModel([RuntimeError("provider down")] * 2), prefix="scripted-hard")
    model = LiteLLMModel(name)
    request = ModelRequest(name, [user("q")])
    with pytest.raises(ModelCallError) as sync_info:
        model.complete(request)
    with pytest.raises(ModelCallError) as async_info:
        await model.acomplete(request)
    for info in (sync_info, async_info):
        assert name in str(info.value) and "provider down" in str(info.value)
        assert info.value.__cause__ is not None


class _StreamCutLiteLLM:
    """Stands in for the LiteLLM module: a stream that yields one chunk, then fails."""

    @staticmethod
    def _chunk(text: str) -> Any:
        return SimpleNamespace(choices=[SimpleNamespace(delta=SimpleNamespace(content=text))])

    def completion(self, **kwargs: Any) -> Any:
        yield self._chunk("par")
        raise ConnectionError("stream cut " + "x" * 5000)

    async def acompletion(self, **kwargs: Any) -> Any:
        async def chunks() -> Any:
            yield self._chunk("par")
            raise ConnectionError("stream cut " + "x" * 5000)

        return chunks()


async def test_hard_def_020_a_stream_cut_midway_is_a_model_call_error_but_a_hooks_error_is_its_own(monkeypatch):
    from llamabot.models import litellm_model

    monkeypatch.setattr(litellm_model, "_litellm", _StreamCutLiteLLM())
    model = litellm_model.LiteLLMModel("fake/model")
    request = ModelRequest("fake/model", [user("q")])
    pieces: list[str] = []
    with pytest.raises(ModelCallError, match="stream cut") as sync_info:
        model.complete(request, pieces.append)
    with pytest.raises(ModelCallError, match="stream cut") as async_info:
        await model.acomplete(request, pieces.append)
    assert pieces == ["par", "par"]
    for info in (sync_info, async_info):
        assert isinstance(info.value.__cause__, ConnectionError) and len(str(info.value)) < 700  # bounded

    def failing_hook(piece: str) -> None:
        raise KeyError("the hook's own error")

    with pytest.raises(KeyError):
        model.complete(request, failing_hook)
