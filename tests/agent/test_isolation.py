"""Per-run isolation: fresh state every call, conversations kept only on purpose, 1,000 concurrent runs."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel
from llamabot.agents.agent_state import conversation_window
from llamabot.models.messages import tool_result, user
from llamabot.models.scripted import tool_call
from llamabot.toolkits.calculator import add

from .helpers import add_then_respond


def test_agt_iso_010_every_call_starts_with_fresh_counters_and_result():
    model = ScriptedModel(responder=add_then_respond)
    bot = AgentBot(tools=[add], model=model, max_iterations=2)
    assert bot("add 1 and 1") == "2"
    assert bot("add 5 and 1") == "6"  # the second call is not cut off by the first call's iteration count
    assert [s.attributes.get("forced") for s in bot.last_trace.of_kind("decision")] == [False, False]


def test_agt_iso_020_call_keeps_the_conversation_on_the_instance_and_reset_forgets_it():
    model = ScriptedModel(responder=add_then_respond)
    bot = AgentBot(tools=[add], model=model)
    bot("add 1 and 1")
    bot("add 2 and 1")
    later = model.requests[-1].messages
    assert [m["content"] for m in later if m["role"] == "user"] == ["add 1 and 1", "add 2 and 1"]
    bot.reset()
    bot("add 3 and 1")
    assert [m["content"] for m in model.requests[-1].messages if m["role"] == "user"] == ["add 3 and 1"]


async def test_agt_iso_030_arun_is_stateless_unless_the_caller_passes_memory():
    model = ScriptedModel(responder=add_then_respond)
    bot = AsyncAgentBot(tools=[add], model=model)
    await bot.arun("add 1 and 1")
    await bot.arun("add 2 and 1")
    assert [m["content"] for m in model.requests[-1].messages if m["role"] == "user"] == ["add 2 and 1"]
    assert bot.memory == []

    session: list = []
    await bot.arun("add 3 and 1", memory=session)
    await bot.arun("add 4 and 1", memory=session)
    assert [m["content"] for m in session if m["role"] == "user"] == ["add 3 and 1", "add 4 and 1"]


async def test_agt_iso_040_a_thousand_concurrent_runs_on_one_bot_never_mix():
    model = ScriptedModel(responder=add_then_respond, latency_s=0.01, record=False)
    bot = AsyncAgentBot(tools=[add], model=model)
    runs = await asyncio.gather(*(bot.arun_with_trace(f"add {i} and 1") for i in range(1000)))
    trace_ids = set()
    for i, (answer, trace) in enumerate(runs):
        assert answer == f"{i + 1}"
        trace_ids.add(trace.trace_id)
        [add_span] = [s for s in trace.spans if s.name == "add"]
        assert add_span.attributes["arguments"] == {"a": float(i), "b": 1.0}
        run_span = trace.spans[0]
        assert run_span.attributes["query"] == f"add {i} and 1"
        prompts = [s.attributes["request"] for s in trace.of_kind("model_call")]
        assert all(p.last_user_text == f"add {i} and 1" for p in prompts)
        assert all(sum(m["role"] == "user" for m in p.messages) == 1 for p in prompts)
    assert len(trace_ids) == 1000


async def test_agt_iso_040_concurrent_runs_with_caller_memory_keep_separate_sessions():
    model = ScriptedModel(responder=add_then_respond, latency_s=0.005)
    bot = AsyncAgentBot(tools=[add], model=model)
    sessions = [[] for _ in range(50)]
    await asyncio.gather(*(bot.arun(f"add {i} and 1", memory=s) for i, s in enumerate(sessions)))
    for i, session in enumerate(sessions):
        assert session[0] == user(f"add {i} and 1")
        assert json.loads(session[1]["tool_calls"][0]["function"]["arguments"]) == {"a": i, "b": 1}


def test_agt_iso_050_a_reused_bot_sends_a_bounded_history():
    model = ScriptedModel(responder=add_then_respond)
    bot = AgentBot(tools=[add], model=model, history_limit=6)
    for i in range(30):
        bot(f"add {i} and 1")
    sizes = [len(r.messages) for r in model.requests]
    assert max(sizes) <= 1 + 1 + 6  # system + this run's question + the bounded window
    last = model.requests[-1].messages
    assert last[1]["role"] != "tool" and {"role": "user", "content": "add 29 and 1"} in last
    assert len(bot.memory) == 30 * 5  # everything is kept; only what is sent is bounded


def test_agt_iso_050_the_window_never_starts_with_an_orphan_tool_result():
    memory = [user("old"), {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
              tool_result("a", "add", 1), user("new"),
              {"role": "assistant", "content": None, "tool_calls": [{"id": "b"}]}, tool_result("b", "add", 2)]
    window = conversation_window(memory, run_start=3, limit=3)
    assert window[0]["role"] != "tool"
    assert window[-3:] == memory[3:]
    assert conversation_window(memory, run_start=3, limit=None) is memory


def _reference_window(memory, run_start, limit):
    """The window as the rules state it, found the slow way: whole turns taken from the newest back while they
    fit (the implementation before the window was computed from where the budget ends)."""
    if limit is None or len(memory) <= limit + 1:
        return memory

    def newest(messages, budget, keep_newest, end):
        first = end
        while first > 0:
            begin = first - 1
            while begin > 0 and messages[begin]["role"] == "tool":
                begin -= 1
            if messages[begin]["role"] == "tool":
                break
            if end - begin > budget and not (keep_newest and first == end):
                break
            first = begin
        return messages[first:end]

    after = memory[run_start + 1:]
    tail = newest(after, limit, True, len(after))
    if len(tail) < len(after):
        return [memory[run_start], *tail]
    return [*newest(memory, limit - len(after), False, run_start), memory[run_start], *after]


@st.composite
def _conversations(draw):
    """A history of user, assistant and tool messages (orphan results included) and the run's user turn in it."""
    roles = draw(st.lists(st.sampled_from(["user", "assistant", "tool", "tool"]), max_size=40))
    run = draw(st.lists(st.sampled_from(["assistant", "tool", "tool", "tool"]), max_size=25))
    if draw(st.booleans()):  # the usual run: its turns start with the model's reply
        run = ["assistant", *run]
    memory = [{"role": role, "content": str(i)} for i, role in enumerate([*roles, "user", *run])]
    return memory, len(roles), draw(st.one_of(st.none(), st.integers(0, 6), st.integers(0, 45)))


@settings(max_examples=1000, deadline=None)
@given(_conversations())
def test_agt_iso_050_the_window_is_the_longest_run_of_whole_turns_that_fits(case):
    memory, run_start, limit = case
    window = conversation_window(memory, run_start, limit)
    assert window == _reference_window(memory, run_start, limit)
    assert memory[run_start] in window and (len(window) == len(memory) or window[0]["role"] != "tool")


def test_agt_msg_010_the_model_sees_proper_chat_messages():
    model = ScriptedModel([tool_call("add", a=2, b=2), tool_call("respond_to_user", response="4")])
    AgentBot(tools=[add], model=model, system_prompt="You add.")("2+2")
    first, second = model.requests
    assert first.messages == [{"role": "system", "content": "You add."}, {"role": "user", "content": "2+2"}]
    assert first.tool_choice == "required" and {t["function"]["name"] for t in first.tools} >= {"add", "respond_to_user"}
    assert second.messages[2]["role"] == "assistant" and second.messages[2]["tool_calls"][0]["type"] == "function"
    assert second.messages[3] == {"role": "tool", "tool_call_id": second.messages[2]["tool_calls"][0]["id"],
                                  "name": "add", "content": "4"}


def test_agt_iso_070_the_window_reads_only_its_own_messages_however_long_the_conversation():
    """A bot kept for a long conversation does not slow down call after call (benchmarks' reuse_ratio): the
    window is found walking back from the newest message, never by reading the whole history."""
    from llamabot.agents.agent_state import conversation_window

    class Counting(list):
        read = 0

        def __getitem__(self, index):
            item = super().__getitem__(index)
            Counting.read += len(item) if isinstance(index, slice) else 1
            return item

    turn = [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]},
            {"role": "tool", "content": "1"}, {"role": "assistant", "content": "a"}]
    for turns in (100, 10_000):
        memory = Counting(turn * turns + [{"role": "user", "content": "now"}])
        Counting.read = 0
        window = conversation_window(memory, len(memory) - 1, 40)
        assert len(window) <= 41 and window[-1]["content"] == "now"
        assert Counting.read < 200, (turns, Counting.read)  # about the window's size, whatever the history
