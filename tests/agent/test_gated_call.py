"""One call of a tool in a run (AGT-CALL-*): the agent's ``FuncNode``, its early (parallel) calls and AoT's atoms
all call their tools through :class:`~llamabot.agents.gated_call.GatedCall`, so an approver sees, decides and
refuses their calls the same way, sync or async, and a tool sees the same ``RunContext`` however its call ran."""

from __future__ import annotations

import asyncio
import json

import pytest

from llamabot import AgentBot, AsyncAgentBot, RunContext, ScriptedModel, tool
from llamabot.agents.gated_call import GatedCall
from llamabot.models.scripted import tool_call, tool_calls
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.aot.record import AtomExecutionError
from llamabot.tools.approval import Decision
from tests.agent.helpers import make_pay

PLAN = json.dumps({"atoms": [{"id": 1, "kind": "tool", "name": "pay", "input": {"amount": 3, "to": "carol"},
                              "dependsOn": []},
                             {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]})


def agent(pay, approver) -> AgentBot:
    model = ScriptedModel([tool_call("pay", amount=3, to="carol"), tool_call("respond_to_user", response="done")])
    return AgentBot(tools=[pay], model=model, approver=approver)


def aot(pay, approver) -> AoTBot:
    return AoTBot(tools=[pay], model=ScriptedModel([PLAN]), approver=approver, max_execution_replans=0)


@pytest.mark.parametrize("run", ["sync", "async"])
def test_agt_call_010_agent_calls_and_aot_atoms_go_through_one_gated_call(monkeypatch, run):
    seen: list[tuple[str, str]] = []
    plain_run, plain_arun = GatedCall.run, GatedCall.arun

    def spied_run(self):
        seen.append(("run", self.tool.name))
        return plain_run(self)

    async def spied_arun(self):
        seen.append(("arun", self.tool.name))
        return await plain_arun(self)

    monkeypatch.setattr(GatedCall, "run", spied_run)
    monkeypatch.setattr(GatedCall, "arun", spied_arun)
    sent, pay = make_pay()
    for bot in (agent(pay, lambda r: True), aot(pay, lambda r: True)):
        bot("Pay carol 3") if run == "sync" else asyncio.run(bot.arun("Pay carol 3"))
    way = "run" if run == "sync" else "arun"
    assert seen == [(way, "pay"), (way, "respond_to_user"), (way, "pay")]
    assert sent == [(3.0, "carol"), (3.0, "carol")]


def test_agt_call_010_an_approver_sees_and_edits_both_calls_alike():
    requests = []

    def approver(request):
        requests.append((request.tool, request.arguments))
        return Decision.approve(arguments={"amount": 2, "to": "carol"})

    sent, pay = make_pay()
    agent(pay, approver)("Pay carol 3")
    result = aot(pay, approver)("Pay carol 3")
    assert requests == [("pay", {"amount": 3, "to": "carol"})] * 2
    assert sent == [(2.0, "carol"), (2.0, "carol")]
    assert result.record.atoms[1].inputs == {"amount": 2.0, "to": "carol"}  # what the tool ran with


def test_agt_call_010_a_rejected_call_is_the_same_not_run_error_in_both():
    sent, pay = make_pay()
    reject = lambda request: Decision.reject("not today")  # noqa: E731
    bot = agent(pay, reject)
    bot("Pay carol 3")
    [shown] = [m["content"] for m in bot.model.requests[1].messages if m.get("role") == "tool"]
    with pytest.raises(AtomExecutionError) as info:
        aot(pay, reject)("Pay carol 3")
    atom = info.value.record.atoms[1]
    assert shown == f"Error: {atom.error}" and "not today" in atom.error
    assert atom.status == "failed" and atom.attempts == 0 and sent == []


async def test_agt_call_020_early_calls_go_through_gated_call_and_see_the_context_of_their_turn(monkeypatch):
    gated: list[str] = []
    plain_arun = GatedCall.arun

    async def spied_arun(self):
        gated.append(self.call.id)
        return await plain_arun(self)

    monkeypatch.setattr(GatedCall, "arun", spied_arun)
    seen: dict[str, RunContext] = {}

    @tool
    async def look(ctx: RunContext[str], key: str) -> str:
        """Look a key up.

        Args:
            key: Which.
        """
        seen[key] = ctx
        await asyncio.sleep(0.01)
        return key

    async def run(limit: int):
        """The RunContext each call saw, by its place in the reply (call id as its index), and the run's trace."""
        seen.clear()
        gated.clear()
        model = ScriptedModel([tool_calls(*[("look", {"key": k}) for k in "abc"]),
                               tool_call("respond_to_user", response="ok")])
        bot = AsyncAgentBot(tools=[look], model=model, max_parallel_tools=limit)
        answer, trace = await bot.arun_with_trace("q", deps="the deps")
        assert answer == "ok"
        ids = [c["id"] for c in model.requests[1].messages[2]["tool_calls"]]
        assert set(ids) <= set(gated)  # every call of the reply, early or in its turn, went through GatedCall
        contexts = [(ids.index(c.tool_call_id), c.deps, c.run_id == trace.trace_id, c.tool_name, c.approval)
                    for c in (seen[k] for k in "abc")]
        return contexts, trace

    in_turn, _ = await run(1)
    early, trace = await run(8)
    assert [s.attributes.get("early", False) for s in trace.spans if s.name == "look"].count(True) == 2
    assert early == in_turn == [(0, "the deps", True, "look", None), (1, "the deps", True, "look", None),
                                (2, "the deps", True, "look", None)]


@pytest.mark.parametrize("run", ["sync", "async"])
def test_agt_call_030_an_aot_atom_sees_its_call_id_and_decision_in_its_run_context(run):
    seen: list[tuple[str | None, str, object]] = []

    @tool(requires_approval=True)
    def pay(ctx: RunContext[str], amount: float, to: str) -> str:
        """Send money.

        Args:
            amount: How much.
            to: To whom.
        """
        seen.append((ctx.tool_call_id, ctx.deps, ctx.approval))
        return "sent"

    bot = aot(pay, lambda request: Decision.approve())
    bot("Pay carol 3", deps="D") if run == "sync" else asyncio.run(bot.arun("Pay carol 3", deps="D"))
    assert seen == [("atom-1", "D", Decision.approve())]


def test_agt_call_030_a_compensation_sees_its_own_call_id():
    seen: list[str | None] = []

    @tool
    def book(ctx: RunContext, item: str) -> str:
        """Book an item.

        Args:
            item: What to book.
        """
        seen.append(ctx.tool_call_id)
        return item

    @tool
    def unbook(ctx: RunContext, item: str) -> str:
        """Cancel a booking.

        Args:
            item: What to cancel.
        """
        seen.append(ctx.tool_call_id)
        return item

    @tool
    def fail(x: int) -> int:
        """Always fails.

        Args:
            x: Anything.
        """
        raise RuntimeError("no")

    plan = json.dumps({"atoms": [
        {"id": 1, "kind": "tool", "name": "book", "input": {"item": "room"}, "dependsOn": []},
        {"id": 2, "kind": "tool", "name": "fail", "input": {"x": 1}, "dependsOn": [1]},
        {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]}]})
    bot = AoTBot(tools=[book, fail], model=ScriptedModel([plan]), compensations={"book": unbook},
                 max_execution_replans=0)
    with pytest.raises(AtomExecutionError):
        bot("Book a room")
    assert seen == ["atom-1", "compensate-1"]
