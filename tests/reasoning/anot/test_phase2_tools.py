"""Phase 2: the LWT tools through the AgentBot graph, with the scripted model (ANOT-P2-*)."""

from __future__ import annotations

import asyncio

import pytest

from llamabot import ScriptedModel
from llamabot.models.scripted import text, tool_call
from llamabot.reasoning.anot import ANoTBot, AsyncANoTBot
from llamabot.reasoning.anot.script import LWTScript
from llamabot.reasoning.anot.tools import PHASE2_KEY, PHASE2_TOOLS, Phase2Context, done, lwt_insert
from llamabot.tools.call import invoke_tool

from .helpers import ITEMS, STRATEGY, phase, scripted_phase2

C3 = "(c3)=LLM('WiFi per item: {(items)}[*][attributes][WiFi]. Which are free? Output: [indices]')"
FINAL = "(final)=LLM('c1={(c1)} c2={(c2)} c3={(c3)}. Output top-5: [best, ...]')"


def tool_results(request):
    return [m["content"] for m in request.messages if m["role"] == "tool"]


def p2_requests(model):
    return [r for r in model.requests if phase(r) == "P2"]


def test_anot_p2_010_the_agent_edits_the_script_with_its_tools_and_done_hands_it_over():
    model = ScriptedModel(responder=scripted_phase2(
        tool_call("lwt_list"),
        tool_call("read", path="[1][attributes]"),
        tool_call("lwt_insert", idx=2, step=C3),
        tool_call("lwt_set", idx=4, step=FINAL),
        tool_call("done"),
    ))
    result = ANoTBot(model=model, debug=0)("q", ITEMS)
    assert [s.id for s in result.steps] == ["c1", "c3", "c2", "final"]
    assert result.steps[3].prompt.startswith("c1={(c1)} c2={(c2)} c3={(c3)}")
    assert result.phase2["fallback"] is None and result.phase2["iterations"] == 5
    last = p2_requests(model)[-1]
    listing, data, inserted, replaced = tool_results(last)
    assert listing.startswith("1. (c1)=CHECK(") and "3. (final)=LLM(" in listing
    assert '"GoodForKids": true' in data and '"WiFi": "free"' in data
    assert inserted == "inserted (c3) as step 2 of 4." and replaced == "set step 4 to (final)."
    assert result.outputs["c3"] == "[1, 3]" and set(result.outputs) == {"c1", "c2", "c3"}  # the scores decided


def test_anot_p2_020_only_the_lwt_tools_are_offered_and_done_is_terminal():
    model = ScriptedModel(responder=scripted_phase2(tool_call("done")))
    bot = ANoTBot(model=model, debug=0)
    bot("q", ITEMS)
    offered = [t["function"]["name"] for t in p2_requests(model)[0].tools]
    assert offered == ["done", "lwt_set", "lwt_insert", "read", "lwt_list"]
    assert p2_requests(model)[0].tool_choice == "required"
    assert done.tool.is_terminal and not lwt_insert.tool.is_terminal
    assert bot.decide_node.final_toolbot.tool_choice == "done"


@pytest.mark.parametrize(
    ("step", "error"),
    [
        ("(c9)=LLM(unquoted)", "must be quoted"),
        ("not a step at all", "expected a step like"),
        ("(c1)=LLM('duplicate id')", "already exists; use lwt_set"),
        ("(c9)=LLM('{(items)}[7][name]')", "item numbers are 1-indexed: use 1..3"),
        ("(c9)=LLM('{(items)}[1][__class__]')", "'__' are not allowed"),
        ("(c9)=LLM('{(c9)}')", "dependency cycle: c9 -> c9"),
    ],
)
def test_anot_p2_030_a_malformed_step_is_an_error_the_model_sees_not_a_crash(step, error):
    model = ScriptedModel(responder=scripted_phase2(tool_call("lwt_insert", idx=1, step=step), tool_call("done")))
    result = ANoTBot(model=model, debug=0)("q", ITEMS)
    feedback = tool_results(p2_requests(model)[-1])[0]
    assert feedback.startswith("Error: ") and error in feedback
    assert result.phase2["fallback"] is None and [s.id for s in result.steps] == ["c1", "c2", "final"]


def test_anot_p2_040_insert_notes_missing_keys_and_steps_not_written_yet():
    model = ScriptedModel(responder=scripted_phase2(
        tool_call("lwt_insert", idx=9, step="(c4)=LLM('{(items)}[*][attributes][Wifi] {(c5)}')"),
        tool_call("lwt_set", idx=4, step="(c4)=LLM('{(items)}[*][attributes][WiFi]')"),
        tool_call("done"),
    ))
    result = ANoTBot(model=model, debug=0)("q", ITEMS)
    note, fixed = tool_results(p2_requests(model)[-1])
    assert note.startswith("inserted (c4) as step 4 of 4.")
    assert "is missing in every item; keys at [attributes]: GoodForKids, WiFi, Ambience" in note
    assert "c5 not written yet" in note
    assert fixed == "set step 4 to (c4)."
    assert result.steps[3].id == "c4"


def test_anot_p2_050_done_refuses_an_unexecutable_script_and_the_model_fixes_it():
    model = ScriptedModel(responder=scripted_phase2(
        tool_call("lwt_set", idx=3, step="(final)=LLM('{(c1)} {(c7)}')"),
        tool_call("done"),
        tool_call("lwt_set", idx=3, step="(final)=LLM('{(c1)} {(c2)}')"),
        tool_call("done"),
    ))
    result = ANoTBot(model=model, debug=0)("q", ITEMS)
    refused = tool_results(p2_requests(model)[-1])[1]
    assert refused.startswith("Error: LWTReferenceError: unknown reference: step 'final' references {(c7)}")
    assert result.steps[-1].prompt == "{(c1)} {(c2)}" and result.phase2["fallback"] is None


def test_anot_p2_060_read_walks_data_only_with_bounded_output():
    model = ScriptedModel(responder=scripted_phase2(
        tool_call("read", path=""),
        tool_call("read", path="[1].__class__"),
        tool_call("read", path="items[3].reviews"),
        tool_call("read", path="query"),
        tool_call("done"),
    ))
    ANoTBot(model=model, debug=0, read_chars=60)("the request", ITEMS)
    overview, dunder, reviews, query = tool_results(p2_requests(model)[-1])
    assert overview == "3 items, numbered 1..3; item fields: name, attributes, reviews"
    assert dunder.startswith("Error: DataPathError") and "'__' are not allowed" in dunder
    assert reviews.startswith("list of 2; element 0:") and len(reviews) <= 60 + len("...[truncated 999 chars]")
    assert query == '"the request"'


def test_anot_p2_070_the_loop_is_bounded_and_the_forced_decision_names_done():
    listing = tool_call("lwt_list")
    model = ScriptedModel(responder=scripted_phase2(listing, listing, listing, tool_call("done")))
    result = ANoTBot(model=model, debug=0, max_iterations=3)("q", ITEMS)
    requests = p2_requests(model)
    assert len(requests) == 4  # 3 decisions, then one forced
    assert [r.tool_choice for r in requests[:3]] == ["required"] * 3
    assert requests[-1].tool_choice == {"type": "function", "function": {"name": "done"}}
    assert requests[-1].last_user_text == "You have used all allowed steps. Finish now with done()."
    assert result.phase2["iterations"] == 4
    assert result.phase2["fallback"] is None and result.phase2["error"] is None  # the forced done() ends the run
    assert [s.id for s in result.steps] == ["c1", "c2", "final"]


def test_anot_p2_080_when_the_agent_fails_the_draft_runs_and_the_reason_is_kept():
    model = ScriptedModel(responder=scripted_phase2(tool_call("no_such_tool")))
    result = ANoTBot(model=model, debug=0, max_errors=2, rank_by="final")("q", ITEMS)
    assert result.phase2["fallback"] == "the agent's script"  # the untouched draft, still executable
    assert "invalid tool calls in a row" in result.phase2["error"]
    assert "unknown tool 'no_such_tool'" in tool_results(p2_requests(model)[-1])[-1]
    assert result.final_ranking.parsed == (3, 1, 2)


def test_anot_p2_090_a_text_reply_without_a_tool_call_ends_phase2_with_the_script_so_far():
    model = ScriptedModel(responder=scripted_phase2(text("I think it is fine")))
    result = ANoTBot(model=model, debug=0)("q", ITEMS)
    assert "no 'respond_to_user' tool" in result.phase2["error"]
    assert [s.id for s in result.steps] == ["c1", "c2", "final"]


async def test_anot_p2_100_concurrent_runs_never_share_a_script():
    def respond(request):
        if phase(request) == "P2" and not tool_results(request):
            tag = "first" if "3 items" in request.last_user_text else "second"
            return tool_call("lwt_insert", idx=1, step=f"(only_{tag})=LLM('{tag}')")
        return scripted_phase2(tool_call("done"))(request)

    bot = AsyncANoTBot(model=ScriptedModel(responder=respond, latency_s=0.002), debug=0)
    first, second = await asyncio.gather(*(bot.arun("q", items) for items in (ITEMS, ITEMS[:2]) for _ in range(1)))
    assert [s.id for s in first.steps] == ["only_first", "c1", "c2", "final"]
    assert [s.id for s in second.steps] == ["only_second", "c1", "c2", "final"]
    assert first.trace.trace_id != second.trace.trace_id


def test_anot_p2_110_tools_need_their_per_run_context():
    with pytest.raises(RuntimeError, match="Phase2Context"):
        invoke_tool(done, {}, {"globals_dict": {}}).unwrap()
    context = Phase2Context(LWTScript([], ITEMS), ITEMS)
    assert invoke_tool(lwt_insert, {"idx": 1, "step": "(a)=LLM('x')"}, {"globals_dict": {PHASE2_KEY: context}}).unwrap().startswith("inserted (a)")
    assert [t.tool.name for t in PHASE2_TOOLS] == ["done", "lwt_set", "lwt_insert", "read", "lwt_list"]


def test_anot_p2_080_a_failed_model_call_in_phase2_falls_back_too():
    def respond(request):
        if phase(request) == "P2":
            raise ConnectionError("tool call cut short")
        return scripted_phase2(tool_call("done"))(request)

    result = ANoTBot(model=ScriptedModel(responder=respond), debug=0, rank_by="final")("q", ITEMS)
    assert result.phase2["error"] == "phase 2: ConnectionError: tool call cut short"
    assert result.phase2["fallback"] == "the agent's script" and result.final_ranking.parsed == (3, 1, 2)


def test_anot_p2_120_setting_a_step_to_itself_changes_nothing_and_says_so():
    script = LWTScript([], ITEMS)
    script.insert(1, C3)
    assert "nothing changed" in script.set(1, C3)
    assert "set step 1" in script.set(1, C3.replace("free", "paid"))


def test_anot_p2_140_phase1s_message_reaches_phase2s_prompt():
    strategy = {**STRATEGY, "message": "Weigh the cozy reviews above everything else."}
    model = ScriptedModel(responder=scripted_phase2(tool_call("done"), strategy=strategy))
    ANoTBot(model=model, debug=0)("kids and cozy", ITEMS)
    first_phase2 = next(r for r in model.requests if phase(r) == "P2")
    assert "Note from planning: Weigh the cozy reviews above everything else." in first_phase2.last_user_text


def test_anot_p2_140_an_empty_message_adds_no_note():
    model = ScriptedModel(responder=scripted_phase2(tool_call("done"), strategy={**STRATEGY, "message": "  "}))
    ANoTBot(model=model, debug=0, draft=False)("kids and cozy", ITEMS)
    first_phase2 = next(r for r in model.requests if phase(r) == "P2")
    assert "Note from planning" not in first_phase2.last_user_text and "Request" not in first_phase2.last_user_text
