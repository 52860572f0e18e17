"""Phase 2's tools are called through the one tool-call logic, sync and async alike (ANOT-P2-120)."""

from __future__ import annotations

from llamabot.reasoning.anot.script import LWTScript
from llamabot.reasoning.anot.tools import PHASE2_KEY, PHASE2_TOOLS, Phase2Context, done, lwt_insert, lwt_list
from llamabot.tools.call import ainvoke_tool, invoke_tool

from .helpers import ITEMS


def run_context() -> dict:
    return {"globals_dict": {PHASE2_KEY: Phase2Context(LWTScript([], ITEMS), ITEMS)}}


async def test_anot_p2_120_sync_and_async_calls_of_a_phase2_tool_give_equal_outcomes():
    step = {"idx": 1, "step": "(a)=LLM('x')"}
    sync_outcome = invoke_tool(lwt_insert, step, run_context())
    async_outcome = await ainvoke_tool(lwt_insert, step, run_context())
    assert sync_outcome == async_outcome and sync_outcome.value == "inserted (a) as step 1 of 1."


def test_anot_p2_120_a_malformed_step_is_an_error_outcome_in_the_form_the_model_sees():
    outcome = invoke_tool(lwt_insert, {"idx": 1, "step": "(a)=LLM('{(a)}')"}, run_context())
    assert outcome.error.startswith("LWTCycleError: dependency cycle: a -> a") and outcome.attempts == 1


def test_anot_p2_120_the_per_run_script_reaches_the_tool_through_the_injected_context():
    context = run_context()
    invoke_tool(lwt_insert, {"idx": 1, "step": "(final)=LLM('rank')"}, context)
    assert invoke_tool(lwt_list, {}, context).value == "1. (final)=LLM('rank')"
    assert invoke_tool(done, {}, context).value == "(final)=LLM('rank')"
    assert context["globals_dict"][PHASE2_KEY].calls == ["lwt_insert(1, \"(final)=LLM('rank')\")", "lwt_list()", "done()"]


async def test_anot_p2_120_the_phase2_tools_do_not_block_so_async_runs_call_them_on_the_loop():
    assert all(not t.tool.blocking for t in PHASE2_TOOLS)
    assert (await ainvoke_tool(lwt_list, {}, run_context())).value == "(the script is empty)"
