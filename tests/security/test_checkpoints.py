"""Checkpoints are input (HRD-SEC-060..080): whatever comes back from storage, resuming raises
:class:`StateCodecError` naming what was wrong and where, imports nothing it should not, and never runs a tool
call the decision node would have refused."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

from llamabot import tool
from llamabot.graph.checkpoint import Checkpoint
from llamabot.graph.codec import MAX_DEPTH, TAG, StateCodecError, dumps_state, loads_state
from llamabot.models.scripted import tool_call, tool_calls
from tests.security.agent_scenarios import agent, results_of_this_run

DEEP = 100_000


def ran_with() -> tuple[object, list[dict]]:
    """An ``add`` tool that records the arguments of every call, and that record."""
    calls: list[dict] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append({"a": a, "b": b})
        return a + b

    return add, calls


def add_then_answer(request):
    """Call add(2, 3), then answer with the last tool result seen (an error included)."""
    seen = results_of_this_run(request)
    if not seen:
        return tool_call("add", a=2, b=3)
    return tool_call("respond_to_user", response=seen[-1]["content"])


def checkpoint_before_add():
    """A fresh bot, its tool's record, and the checkpoint taken after the decision to call add(2, 3)."""
    add, calls = ran_with()
    bot, _ = agent([add], add_then_answer)
    saved: list[Checkpoint] = []
    assert bot.run_sync("add 2 and 3", hooks=[bot.checkpoints(saved.append)])[0] == "5"
    before = next(c for c in saved if c.node == "decision" and c.action == "add")
    add, calls = ran_with()
    bot, _ = agent([add], add_then_answer)
    return bot, calls, before


def tampered(checkpoint: Checkpoint, change) -> Checkpoint:
    """``checkpoint`` with its state changed by ``change(state)``, saved again."""
    state = loads_state(checkpoint.state)
    change(state)
    return Checkpoint(checkpoint.node, checkpoint.action, dumps_state(state), checkpoint.trace_id, checkpoint.step)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def valid_checkpoint_json(**changes) -> str:
    return json.dumps({"node": "decision", "action": "add", "state": "{}", "trace_id": "", "step": 0, **changes})


MALFORMED_CHECKPOINTS = {
    "not json": ("{'node': 'decision'", "checkpoint", "not JSON text"),
    "a json list": ("[1, 2]", "checkpoint", "a JSON object was expected, not a list"),
    "keys missing": (json.dumps({"node": "decision"}), "checkpoint", "keys missing: ['action', 'state']"),
    "an unknown key": (valid_checkpoint_json(extra=1), "checkpoint", "unknown keys: ['extra']"),
    "a node that is not a str": (valid_checkpoint_json(node=5), "checkpoint['node']", "a int where str"),
    "a step that is a bool": (valid_checkpoint_json(step=True), "checkpoint['step']", "a bool where int"),
    "deep json": (nested(DEEP), "checkpoint", "nests too deeply"),
    "not text": (b"\xff\xfe", "checkpoint", "not JSON text"),
}

MALFORMED_STATES = {
    "not json": ("{", "state", "not JSON text"),
    "100k-deep json": (nested(DEEP), "state", "nests too deeply to read"),
    "deeper than the codec walks": (nested(MAX_DEPTH + 400), "state" + "[0]" * MAX_DEPTH,
                                    f"deeper than {MAX_DEPTH} levels"),
    "a 100k-digit fraction": (json.dumps({"f": {TAG: "fraction", "value": "1" * DEEP + "/3"}}), "state['f']",
                              "malformed 'fraction' value"),
    "a 100k-digit integer": ('{"n": ' + "7" * DEEP + "}", "state", "not JSON text"),
    "a huge deque maxlen": (json.dumps({"d": {TAG: "deque", "items": [], "maxlen": 10**30}}), "state['d']",
                            "'maxlen' is 1000000000000000000000000000000"),
    "a deque longer than its maxlen": (json.dumps({"d": {TAG: "deque", "items": [1, 2, 3], "maxlen": 1}}),
                                       "state['d']", "3 items, more than its maxlen 1"),
    "a json list": ("[]", "state", "state is a dict, not a list"),
    "no memory": ("{}", "state['memory']", "missing"),
}


@pytest.mark.parametrize("text, path, words", MALFORMED_CHECKPOINTS.values(), ids=list(MALFORMED_CHECKPOINTS))
def test_hrd_sec_060_a_malformed_checkpoint_is_refused_with_state_codec_error(text, path, words):
    bot, calls, _ = checkpoint_before_add()
    with pytest.raises(StateCodecError) as raised:
        bot.resume(text)
    assert raised.value.path == path and words in raised.value.reason, raised.value
    assert calls == []


@pytest.mark.parametrize("state, path, words", MALFORMED_STATES.values(), ids=list(MALFORMED_STATES))
def test_hrd_sec_060_a_malformed_saved_state_is_refused_with_state_codec_error(state, path, words):
    bot, calls, before = checkpoint_before_add()
    with pytest.raises(StateCodecError) as raised:
        bot.resume(Checkpoint(before.node, before.action, state))
    assert raised.value.path == path and words in raised.value.reason, raised.value
    assert len(str(raised.value)) < 2_000  # a bounded message, whatever the size of the input
    assert calls == []


@pytest.mark.parametrize("key, value, words", [
    ("memory", "not a list", "a str where list was expected"),
    ("_pending", [1], "a int, not a PendingCall"),
    ("_run_start", 99, "is not an index of the memory"),
    ("_done", 1, "a int where bool was expected"),
])
def test_hrd_sec_060_an_agent_state_of_the_wrong_shape_is_refused_naming_the_key(key, value, words):
    bot, calls, before = checkpoint_before_add()

    def change(state):
        state[key] = value

    with pytest.raises(StateCodecError) as raised:
        bot.resume(tampered(before, change))
    assert raised.value.path.startswith(f"state[{key!r}]") and words in raised.value.reason, raised.value


@pytest.mark.parametrize("name", [
    "llamabot.durable.runtime:Durable",  # would import DBOS
    "llamabot.models.litellm_model:LiteLLMModel",  # would import LiteLLM
    "llamabot.cli:app",
])
def test_hrd_sec_070_a_class_outside_the_state_modules_is_refused_before_anything_is_imported(name):
    code = f"""
        import json, sys
        from llamabot.graph.codec import StateCodecError, loads_state
        before = set(sys.modules)
        try:
            loads_state(json.dumps({{"x": {{"__llamabot__": "dataclass", "class": {name!r}, "fields": {{}}}}}}))
        except StateCodecError as exc:
            print(exc.path, "|", exc.reason)
        print(sorted(m for m in set(sys.modules) - before if m.startswith(("llamabot", "dbos", "litellm", "typer"))))
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    refusal, imported = out.stdout.strip().splitlines()
    assert refusal.startswith(f"state['x'] | class {name} may not be restored"), out.stderr[-2000:]
    assert imported == "[]"


def test_hrd_sec_070_a_class_of_the_state_modules_is_still_restored():
    from llamabot.agents.agent_state import PendingCall

    call = PendingCall("c1", "add", {"a": 1}, '{"a": 1}')
    assert loads_state(dumps_state({"call": call})) == {"call": call}


TAMPERINGS = {
    "arguments of the wrong type": (lambda call: setattr(call, "arguments", {"a": "two", "b": 3}),
                                    "invalid arguments for tool 'add'"),
    "an argument missing": (lambda call: setattr(call, "arguments", {"a": 2}), "invalid arguments for tool 'add'"),
    "another tool's name": (lambda call: setattr(call, "name", "respond_to_user"), "the run was at tool 'add'"),
    "a tool the bot lacks": (lambda call: setattr(call, "name", "rm_rf"), "there is no tool 'rm_rf' here"),
}


@pytest.mark.parametrize("run", ["sync", "async"])
@pytest.mark.parametrize("change, words", TAMPERINGS.values(), ids=list(TAMPERINGS))
def test_hrd_sec_080_a_tampered_pending_call_is_validated_again_and_shown_to_the_model_as_an_error(change, words, run):
    bot, calls, before = checkpoint_before_add()
    checkpoint = tampered(before, lambda state: change(state["func_call"]))
    answer = bot.resume(checkpoint) if run == "sync" else asyncio.run(bot.aresume(checkpoint))
    assert calls == []  # the tool never ran with what the checkpoint said
    assert answer.startswith("Error: ") and words in answer and answer.endswith("Fix the call and try again.")


def test_hrd_sec_080_a_tampered_call_queued_behind_it_is_answered_with_the_error_and_dropped():
    add, calls = ran_with()

    def two_adds_then_answer(request):
        seen = results_of_this_run(request)
        if not seen:
            return tool_calls(("add", {"a": 2, "b": 3}), ("add", {"a": 4, "b": 5}))
        return tool_call("respond_to_user", response=" | ".join(m["content"] for m in seen))

    bot, _ = agent([add], two_adds_then_answer)
    saved: list[Checkpoint] = []
    bot.run_sync("two sums", hooks=[bot.checkpoints(saved.append)])
    before = next(c for c in saved if c.node == "decision" and c.action == "add")
    add, calls = ran_with()
    bot, _ = agent([add], two_adds_then_answer)

    def change(state):
        state["_pending"][0].arguments = {"a": [4], "b": 5}

    answer = bot.resume(tampered(before, change))
    assert calls == [{"a": 2, "b": 3}]  # the first ran; the tampered one never did
    first, second = answer.split(" | ")
    assert second == "5" and first.startswith("Error: invalid arguments for tool 'add'")


def test_hrd_sec_080_a_pending_call_the_model_never_made_is_refused():
    from llamabot.agents.agent_state import PendingCall

    bot, calls, before = checkpoint_before_add()

    def change(state):
        state["_pending"] = [PendingCall("injected", "add", {"a": 4, "b": 5}, "{}")]

    with pytest.raises(StateCodecError) as raised:
        bot.resume(tampered(before, change))
    assert raised.value.path == "state['_pending'][0].id" and "no tool call the model made" in raised.value.reason
    assert calls == []


def test_hrd_sec_080_a_valid_checkpoint_still_resumes_to_the_same_answer():
    bot, calls, before = checkpoint_before_add()
    assert bot.resume(Checkpoint.from_json(before.to_json())) == "5"
    assert calls == [{"a": 2, "b": 3}]
