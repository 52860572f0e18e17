"""A tool marked ``requires_approval=True`` never runs without a decision, in any kind of run (API-APPROVE-*).

Without an approver a run pauses before the reply's calls (all of them together) and raises ApprovalRequired,
whose PausedRun holds the calls and the checkpoint; ``bot.resume(paused, decisions)`` continues it, here or from
JSON in another bot instance. With ``approver=`` the decision is taken in-process.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from llamabot import AgentBot, ScriptedModel, tool
from llamabot.agents.approval import ApprovalRequired, PausedRun
from llamabot.models.reply import ModelReply, ToolCallRequest
from llamabot.models.scripted import tool_call, tool_calls
from llamabot.reasoning.aot import AoTBot
from llamabot.tools.approval import ApprovalMissingError, ApprovalRequest, Decision
from tests.agent.helpers import make_pay


def make_tools():
    """A payment tool that records every transfer, so a test sees exactly what ran, and a balance tool."""
    sent, pay = make_pay()

    @tool
    def balance() -> float:
        """The balance."""
        return 100.0

    return sent, pay, balance


def pause(bot, question: str) -> ApprovalRequired:
    """The pause of a run that must stop for approval (the test fails if it does not)."""
    with pytest.raises(ApprovalRequired) as info:
        bot(question)
    return info.value


def pay_then_answer(*first) -> ScriptedModel:
    return ScriptedModel([*first, tool_call("respond_to_user", response="done")])


def test_api_approve_010_a_plain_run_pauses_before_the_call_and_nothing_is_sent():
    sent, pay, balance = make_tools()
    bot = AgentBot(tools=[pay, balance], model=pay_then_answer(tool_call("pay", amount=5, to="alice")))
    paused = pause(bot, "Pay alice 5")
    assert sent == []
    (request,) = paused.requests
    assert (request.tool, request.arguments) == ("pay", {"amount": 5.0, "to": "alice"})
    assert request.call_id


def test_api_approve_020_resume_with_approval_runs_the_call_once_and_finishes():
    sent, pay, balance = make_tools()
    model = pay_then_answer(tool_call("pay", amount=5, to="alice"))
    bot = AgentBot(tools=[pay, balance], model=model)
    paused = pause(bot, "Pay alice 5").paused
    assert bot.resume(paused, {paused.requests[0].call_id: Decision.approve()}) == "done"
    assert sent == [(5.0, "alice")]
    # the model saw the tool's real result after the resume
    assert any(m.get("role") == "tool" and "sent 5.0 to alice" in str(m.get("content"))
               for m in model.requests[-1].messages)


def test_api_approve_010_a_later_call_reusing_an_approved_calls_id_waits_for_its_own_decision():
    # providers that give no ids (and text calls) may repeat one from an earlier reply: the decision on the first
    # call must not let the second (5000, not 5) run unseen
    def pay_reply(amount: float) -> ModelReply:
        arguments = json.dumps({"amount": amount, "to": "alice"})
        return ModelReply(tool_calls=(ToolCallRequest("call_0", "pay", arguments),), finish_reason="tool_calls")

    sent, pay, balance = make_tools()
    bot = AgentBot(tools=[pay, balance], model=pay_then_answer(pay_reply(5), pay_reply(5000)))
    paused = pause(bot, "Pay alice 5").paused
    with pytest.raises(ApprovalRequired) as again:
        bot.resume(paused, {"call_0": Decision.approve()})
    assert sent == [(5.0, "alice")]
    assert [(r.call_id, r.arguments["amount"]) for r in again.value.requests] == [("call_0", 5000.0)]
    assert bot.resume(again.value, {"call_0": Decision.reject("too much")}) == "done"
    assert sent == [(5.0, "alice")]


def test_api_approve_020_after_resume_the_bots_conversation_holds_what_the_resumed_run_did():
    sent, pay, balance = make_tools()
    model = ScriptedModel([tool_call("pay", amount=5, to="alice"), tool_call("respond_to_user", response="paid"),
                           tool_call("respond_to_user", response="I paid alice 5")])
    bot = AgentBot(tools=[pay, balance], model=model)
    paused = pause(bot, "Pay alice 5").paused
    assert bot.resume(paused, {paused.requests[0].call_id: True}) == "paid"
    assert bot("What did you do?") == "I paid alice 5"
    shown = [m.get("content") for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert shown == ["sent 5.0 to alice", "paid"]  # not "Not run: the run paused" for a call that ran
    with pytest.raises(TypeError, match="memory"):  # a resumed run continues its checkpoint's conversation
        bot.resume(paused, {paused.requests[0].call_id: True}, memory=[])


def test_api_approve_030_reject_shows_the_reason_to_the_model_and_never_runs_the_tool():
    sent, pay, balance = make_tools()
    model = pay_then_answer(tool_call("pay", amount=5, to="mallory"))
    bot = AgentBot(tools=[pay, balance], model=model)
    paused = pause(bot, "Pay mallory 5")
    call_id = paused.requests[0].call_id
    assert bot.resume(paused, {call_id: Decision.reject("not a known payee")}) == "done"
    assert sent == []
    shown = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert any("ToolRejectedError" in c and "not a known payee" in c for c in shown)


def test_api_approve_040_edited_arguments_are_validated_and_used():
    sent, pay, balance = make_tools()
    bot = AgentBot(tools=[pay, balance], model=pay_then_answer(tool_call("pay", amount=500, to="alice")))
    paused = pause(bot, "Pay alice")
    call_id = paused.requests[0].call_id
    bot.resume(paused, {call_id: Decision.approve(arguments={"amount": 50, "to": "alice"})})
    assert sent == [(50.0, "alice")]


def test_api_approve_045_invalid_edited_arguments_are_shown_to_the_model_not_run():
    sent, pay, balance = make_tools()
    model = pay_then_answer(tool_call("pay", amount=500, to="alice"))
    bot = AgentBot(tools=[pay, balance], model=model)
    paused = pause(bot, "Pay alice")
    bot.resume(paused, {paused.requests[0].call_id: Decision.approve(arguments={"amount": "lots"})})
    assert sent == []
    shown = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert any("ToolArgumentsError" in c for c in shown)


def test_api_approve_050_the_paused_run_continues_from_json_in_another_bot():
    sent, pay, balance = make_tools()
    first = AgentBot(tools=[pay, balance], model=ScriptedModel([tool_call("pay", amount=5, to="alice")]))
    paused = pause(first, "Pay alice 5")
    text = paused.paused.to_json()
    json.loads(text)  # plain JSON, storable anywhere
    restored = PausedRun.from_json(text)
    other = AgentBot(tools=[pay, balance], model=ScriptedModel([tool_call("respond_to_user", response="ok")]))
    assert other.resume(restored, {restored.requests[0].call_id: True}) == "ok"
    assert sent == [(5.0, "alice")]


def test_api_approve_060_parallel_calls_of_one_reply_pause_together_before_any_runs():
    sent, pay, balance = make_tools()
    reply = tool_calls(("balance", {}), ("pay", {"amount": 1, "to": "a"}), ("pay", {"amount": 2, "to": "b"}))
    model = pay_then_answer(reply)
    bot = AgentBot(tools=[pay, balance], model=model)
    with pytest.raises(ApprovalRequired) as info:
        asyncio.run(bot.arun("Pay a and b"))
    paused = info.value
    assert [r.arguments["to"] for r in paused.requests] == ["a", "b"]
    assert sent == []
    ids = [r.call_id for r in paused.requests]
    with pytest.raises(ValueError, match="no decision"):
        bot.resume(paused, {ids[0]: True})  # every waiting call needs a decision
    result = asyncio.run(bot.aresume(paused, {ids[0]: True, ids[1]: Decision.reject("no")}))
    assert result == "done"
    assert sent == [(1.0, "a")]


def test_api_approve_070_astream_reports_the_pause_as_an_event_and_raises():
    sent, pay, balance = make_tools()
    bot = AgentBot(tools=[pay, balance], model=pay_then_answer(tool_call("pay", amount=5, to="alice")))

    async def collect():
        kinds = []
        with pytest.raises(ApprovalRequired):
            async for event in bot.astream("Pay alice 5"):
                kinds.append((event.kind, event.data))
        return kinds

    events = asyncio.run(collect())
    kind, data = events[-1]
    assert kind == "approval_required"
    assert data["requests"][0]["tool"] == "pay"
    assert PausedRun.from_json(data["paused"]).requests[0].tool == "pay"
    assert sent == []


def test_api_approve_080_an_approver_decides_in_process_sync_and_async():
    sent, pay, balance = make_tools()
    seen: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Decision:
        seen.append(request)
        return Decision.approve() if request.arguments["to"] == "alice" else Decision.reject("unknown payee")

    bot = AgentBot(tools=[pay, balance], approver=approver, model=ScriptedModel([
        tool_call("pay", amount=5, to="alice"), tool_call("pay", amount=9, to="eve"),
        tool_call("respond_to_user", response="done")]))
    assert bot("pay both") == "done"
    assert sent == [(5.0, "alice")]
    assert [r.arguments["to"] for r in seen] == ["alice", "eve"]

    async def aapprover(request: ApprovalRequest) -> bool:
        await asyncio.sleep(0)
        return True

    other = AgentBot(tools=[pay, balance], model=pay_then_answer(tool_call("pay", amount=7, to="bob")))
    assert asyncio.run(other.arun("pay bob", approver=aapprover)) == "done"  # per-run approver
    assert sent[-1] == (7.0, "bob")


def test_api_approve_085_an_async_approver_in_a_sync_run_is_an_error_not_an_approval():
    sent, pay, balance = make_tools()

    async def aapprover(request):
        return True

    bot = AgentBot(tools=[pay, balance], approver=aapprover, model=pay_then_answer(tool_call("pay", amount=1, to="x")))
    with pytest.raises(TypeError, match="async"):
        bot("pay x")
    assert sent == []


def test_api_approve_090_a_custom_graph_without_a_pausing_decision_never_runs_the_tool():
    from llamabot.agents.nodes import FuncNode

    sent, pay, balance = make_tools()
    node = FuncNode(pay.tool)

    class Call:
        id, name, arguments, synthetic = "c1", "pay", {"amount": 1.0, "to": "x"}, False

    with pytest.raises(ApprovalMissingError, match="requires approval"):
        node.prep({"func_call": Call(), "_pending": [], "memory": []})
    assert sent == []


def test_api_approve_100_aot_atoms_of_approval_tools_need_the_approver():
    sent, pay, balance = make_tools()
    plan = {"atoms": [{"id": 1, "kind": "tool", "name": "pay", "input": {"amount": 3, "to": "carol"},
                       "dependsOn": []},
                      {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    unapproved = AoTBot(tools=[pay], model=ScriptedModel([json.dumps(plan)] * 4), max_execution_replans=0)
    with pytest.raises(Exception, match="requires approval"):
        unapproved("Pay carol 3")
    assert sent == []
    approved = AoTBot(tools=[pay], model=ScriptedModel([json.dumps(plan)]), approver=lambda r: True)
    result = approved("Pay carol 3")
    assert sent == [(3.0, "carol")]
    assert result.answer == "sent 3.0 to carol"


def test_api_approve_110_decisions_for_calls_that_do_not_wait_are_refused():
    sent, pay, balance = make_tools()
    bot = AgentBot(tools=[pay, balance], model=pay_then_answer(tool_call("pay", amount=5, to="alice")))
    paused = pause(bot, "Pay alice 5")
    with pytest.raises(ValueError, match="do not wait"):
        bot.resume(paused, {"nope": True, paused.requests[0].call_id: True})
    assert sent == []


def test_api_approve_115_decisions_that_are_not_a_mapping_are_a_type_error_showing_the_mapping():
    sent, pay, balance = make_tools()
    bot = AgentBot(tools=[pay, balance], model=pay_then_answer(tool_call("pay", amount=5, to="alice")))
    paused = pause(bot, "Pay alice 5")
    call_id = paused.requests[0].call_id
    for wrong in ([call_id], call_id, (call_id,), 1):
        with pytest.raises(TypeError, match=f"write {{'{call_id}': Decision.approve\\(\\)}}"):
            bot.resume(paused, wrong)
    assert sent == []
    assert bot.resume(paused, {call_id: True}) is not None and len(sent) == 1


#: The payment tool of the command-line test, importable as ``tests.agent.test_approval:cli_pay`` (its tool is ``pay``).
SENT, cli_pay, _ = make_tools()


def test_api_approve_120_the_agent_command_without_a_terminal_refuses_and_never_runs_the_tool():
    from typer.testing import CliRunner

    from llamabot.cli import app
    from llamabot.models.scripted_provider import register_scripted_provider

    name = register_scripted_provider(ScriptedModel([tool_call("pay", amount=5, to="alice"),
                                                     tool_call("respond_to_user", response="done")]),
                                      prefix="scripted-approval-cli")
    result = CliRunner().invoke(app, ["agent", "pay alice", "--model", name, "--tool",
                                      "tests.agent.test_approval:cli_pay"], env={"COLUMNS": "200"})
    assert result.exit_code == 3, result.output
    assert 'pay({"amount": 5.0, "to": "alice"})' in result.output and "no terminal" in result.output
    assert SENT == []


def test_api_approve_130_a_paused_run_saved_before_the_agent_modules_moved_still_resumes():
    """Paused runs name their state classes by module; llamabot.graph's agent modules moved to llamabot.agents, and
    a run paused before the move (waiting for a person) must still continue."""
    sent, pay, balance = make_tools()
    paused = pause(AgentBot(tools=[pay, balance], model=ScriptedModel([tool_call("pay", amount=5, to="alice")])),
                   "Pay alice 5").paused
    text = paused.to_json()
    assert "llamabot.agents.agent_state:PendingCall" in text
    old = PausedRun.from_json(text.replace("llamabot.agents.agent_state", "llamabot.graph.agent_state"))
    bot = AgentBot(tools=[pay, balance], model=ScriptedModel([tool_call("respond_to_user", response="done")]))
    assert bot.resume(old, {old.requests[0].call_id: Decision.approve()}) == "done"
    assert sent == [(5.0, "alice")]
