"""ToTBot and AsyncToTBot: the graph that drives the machine, with the scripted model (TOT-DRV-*, TOT-VIZ-*)."""

from __future__ import annotations

import asyncio

import pytest

from llamabot.evals.game24.check import check_game24
from llamabot.evals.game24.prompts import Game24Prompts
from llamabot.evals.game24.steps import is_solution_path
from llamabot.graph.flow import AsyncFlow, DualNode, Flow
from llamabot.models.reply import ModelReply
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.tot.graph import AsyncToTBot, ToTBot
from llamabot.reasoning.tot.machine import Status, ToTError
from llamabot.reasoning.tot.prompts import DEFAULT_EVALUATION_PROMPT, DEFAULT_GENERATION_PROMPT
from tests.reasoning.tot.helpers import oracle_model, requested_count, requested_ids, schema_name

GAME = {"prompts": Game24Prompts(), "min_depth": 3, "max_depth": 3}


def generic(request):
    """Thoughts named after the request's path; every thought scores 0.6, except those ending in 'B' (0.9)."""
    if schema_name(request) == "tot_thoughts":
        depth = request.last_user_text.count("\n") - 2
        return json_reply({"thoughts": [f"step{depth}{letter}" for letter in "ABC"[: requested_count(request)]]})
    return json_reply({"scores": {i: 0.9 if i == "t2" else 0.6 for i in requested_ids(request)}})


def test_tot_drv_010_each_directive_becomes_one_model_call_and_the_result_comes_back():
    model = oracle_model()
    bot = ToTBot(model=model, **GAME)
    result = bot("4 9 10 13")
    assert result.termination.reason == "threshold" and result.termination.status == "completed"
    assert result.answer is not None and check_game24("4 9 10 13", result.answer)
    kinds = [schema_name(r) for r in model.requests]
    assert kinds == ["tot_thoughts", "tot_scores"] * (len(kinds) // 2)  # generate, evaluate, generate...
    assert result.usage["total_tokens"] == sum(
        s.attributes["reply"].usage.total_tokens for s in bot.last_trace.of_kind("model_call"))
    steps = bot.last_trace.of_kind("tot_step")
    assert [s.name for s in steps] == ["generate", "evaluate"] * (len(steps) // 2)
    assert all(s.parent_id == bot.last_trace.of_kind("run")[0].span_id for s in steps)
    assert len(bot.last_trace.of_kind("model_call")) == len(model.requests)


def test_tot_drv_020_the_async_twin_makes_the_same_calls_and_finds_the_same_answer():
    sync_model, async_model = oracle_model(), oracle_model()
    sync_result = ToTBot(model=sync_model, **GAME)("1 1 4 6")
    async_result = asyncio.run(AsyncToTBot(model=async_model, **GAME).arun("1 1 4 6"))
    assert async_result.answer == sync_result.answer and async_result.solution_path == sync_result.solution_path
    assert [r.messages for r in async_model.requests] == [r.messages for r in sync_model.requests]
    assert asyncio.run(AsyncToTBot(model=oracle_model(), **GAME).arun("1 1 4 6")).answer == sync_result.answer


def test_tot_drv_030_the_graph_is_built_from_dual_nodes_and_strict_flows():
    bot = ToTBot(model=ScriptedModel(responder=generic))
    nodes = (bot.expand_node, bot.generate_node, bot.evaluate_node)
    assert all(isinstance(n, DualNode) for n in nodes)
    assert bot.expand_node.successors == {"generate": bot.generate_node, "evaluate": bot.evaluate_node}
    assert bot.generate_node.successors == {"expand": bot.expand_node} == bot.evaluate_node.successors
    assert isinstance(bot.flow, Flow) and isinstance(bot.async_flow, AsyncFlow)
    assert bot.flow.start_node is bot.expand_node is bot.async_flow.start_node
    source = str(bot.to_mermaid())
    assert source.startswith("flowchart") and all(f'"{a}"' in source for a in ("generate", "evaluate", "expand"))
    other = ToTBot(model=ScriptedModel(responder=generic))
    assert other.expand_node is not bot.expand_node  # nodes are built per bot


class StreamOnlyModel:
    """A model that delivers its text only as streamed pieces (the final reply has no content)."""

    name = "stream-only"

    def __init__(self, responder):
        self.inner = ScriptedModel(responder=responder)

    def complete(self, request, on_token=None):
        reply = self.inner.complete(request)
        if on_token is None:
            return reply
        for index in range(0, len(reply.content), 5):
            on_token(reply.content[index:index + 5])
        return ModelReply(content=None, usage=reply.usage, finish_reason="stop")

    async def acomplete(self, request, on_token=None):
        return self.complete(request, on_token)


def test_tot_drv_040_streamed_pieces_reach_the_stream_target_and_the_machine_as_llm_partial():
    pieces: list[str] = []
    bot = ToTBot(model=StreamOnlyModel(generic), stream_target=pieces.append, branching_factor=2, max_depth=2)
    result = bot("a problem")
    assert result.termination.status == "completed" and result.termination.node_count == 7
    assert '{"thoughts": ' in "".join(pieces)  # the machine parsed thoughts it only ever saw as partials
    assert result.best.path_text == ("step0B", "step1B")


def test_tot_drv_050_a_failed_model_call_ends_in_error_without_raising():
    bot = ToTBot(model=ScriptedModel([json_reply({"thoughts": ["a", "b"]}), ConnectionError("provider down")]))
    result = bot("a problem")
    assert result.termination.reason == "error" and result.termination.status == "error"
    assert "ConnectionError: provider down" in result.diagnostics["error"]
    with pytest.raises(ToTError, match="empty"):
        bot("   ")


def test_tot_drv_060_every_call_starts_a_fresh_search_and_concurrent_runs_never_mix():
    bot = ToTBot(model=ScriptedModel(responder=generic), branching_factor=2, max_depth=2)
    first, second = bot("problem one"), bot("problem two")
    assert first.machine.prompt == "problem one" and second.machine.prompt == "problem two"
    assert first.termination.node_count == second.termination.node_count == 7
    abot = AsyncToTBot(model=oracle_model(latency_s=0.001), **GAME)
    puzzles = ["4 9 10 13", "1 1 4 6", "1 1 11 11", "3 3 8 8"] * 10

    async def run_all():
        return await asyncio.gather(*(abot.arun(p) for p in puzzles))

    results = asyncio.run(run_all())
    assert [r.machine.prompt for r in results] == puzzles
    assert all(check_game24(p, r.answer) for p, r in zip(puzzles, results, strict=True))


def test_tot_drv_070_prompts_options_and_model_parameters_can_be_set():
    model = ScriptedModel(responder=generic)
    ToTBot(model=model, generation_prompt="GEN", evaluation_prompt="EVAL", branching_factor=2, max_depth=1,
           temperature=0.7)("p")
    generation, evaluation = model.requests[:2]
    assert generation.messages[0] == {"role": "system", "content": "GEN"}
    assert evaluation.messages[0] == {"role": "system", "content": "EVAL"}
    assert requested_count(generation) == 2 and generation.params == {"temperature": 0.7}
    default = ScriptedModel(responder=generic)
    ToTBot(model=default, max_depth=1)("p")
    assert default.requests[0].messages[0]["content"] == DEFAULT_GENERATION_PROMPT
    assert default.requests[1].messages[0]["content"] == DEFAULT_EVALUATION_PROMPT
    plain = ScriptedModel(["1. a\n2. b", "1. 0.5\n2. 0.9"])
    result = ToTBot(model=plain, json_output=False, max_depth=1, branching_factor=2)("p")
    assert plain.requests[0].response_format is None and result.best.content == "b"


def test_tot_drv_075_the_evaluator_sees_the_problem_and_the_path_to_each_thought():
    model = ScriptedModel(responder=generic)
    ToTBot(model=model, branching_factor=2, max_depth=3, min_depth=3)("Plan a trip to Rome")
    deep = [r for r in model.requests if schema_name(r) == "tot_scores"][2]
    text = deep.last_user_text
    assert "Problem: Plan a trip to Rome" in text and "1. step0B" in text and "2. step1B" in text
    assert "t1: step2A" in text and "t2: step2B" in text


def test_tot_drv_080_an_unreadable_reply_is_repaired_through_the_driver():
    model = ScriptedModel(
        ["Sorry, here are ideas without a list", json_reply({"thoughts": ["a", "b"]}),
         json_reply({"scores": {"t1": 0.2, "t2": 0.8}})]
    )
    result = ToTBot(model=model, max_depth=1, branching_factor=2)("p")
    repair = model.requests[1]
    assert repair.messages[-2] == {"role": "assistant", "content": "Sorry, here are ideas without a list"}
    assert "could not be read" in repair.messages[-1]["content"] and '"thoughts"' in repair.messages[-1]["content"]
    assert repair.response_format == model.requests[0].response_format
    assert result.best.content == "b" and result.diagnostics["parse_retries"] == {"generation": 1, "evaluation": 0}


def test_tot_drv_090_a_trusted_goal_test_ends_the_search_with_success():
    model = oracle_model()
    result = ToTBot(model=model, goal_test=is_solution_path, early_success_threshold=2.0, **GAME)("4 9 10 13")
    assert result.termination.reason == "success" and check_game24("4 9 10 13", result.answer)


def test_tot_drv_095_on_step_sees_every_machine_update():
    seen = []
    ToTBot(model=ScriptedModel(responder=generic), on_step=seen.append, branching_factor=2, max_depth=2)("p")
    assert seen[0].status is Status.GENERATING and seen[-1].status is Status.COMPLETED
    assert len(seen) == 7  # start, then one update per model reply (3 expansions x 2 calls)


def test_tot_viz_010_the_explored_tree_renders_as_mermaid_with_scores_and_the_solution_path():
    model = ScriptedModel(
        [json_reply({"thoughts": ['say "hi" <b>', "b"]}), json_reply({"scores": {"t1": 0.25, "t2": 0.75}}),
         json_reply({"thoughts": ["c"]}), json_reply({"scores": {"t1": 0.5}})]
    )
    result = ToTBot(model=model, branching_factor=2, max_depth=2, convergence_window=1, max_nodes=4)("the problem")
    diagram = result.to_mermaid()
    source = str(diagram)
    assert source.splitlines()[0] == "flowchart TD"
    assert 'n0["the problem"]' in source
    assert 'n1["say #quot;hi#quot; #lt;b#gt;<br/>score 0.25"]' in source
    assert 'n2["b<br/>score 0.75"]' in source and 'n3["c<br/>score 0.50"]' in source
    assert "class n0,n2,n3 solution" in source and "linkStyle 1,2 stroke:#2e7d32" in source
    assert diagram._repr_markdown_().startswith("```mermaid\n")


def _overlapping(trace) -> int:
    """The most model calls of a run in flight at one moment (from their spans)."""
    spans = trace.of_kind("model_call")
    return max(sum(1 for o in spans if o.start < s.end and s.start < o.end) for s in spans)


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_tot_drv_100_a_wave_sends_its_calls_side_by_side_and_finds_the_same_answer_either_way(flavour):
    """TOT-DRV-100: with ``parallel_expansions`` a round's model calls overlap (threads in a sync run, tasks in an
    async one); the replies are applied in the order the machine asked, so both runs make the same calls."""
    bot = ToTBot(model=oracle_model(latency_s=0.05), parallel_expansions=3, branching_factor=2, **GAME)
    result = bot("4 9 10 13") if flavour == "sync" else asyncio.run(bot.arun("4 9 10 13"))
    reference_bot = ToTBot(model=oracle_model(), parallel_expansions=3, branching_factor=2, **GAME)
    reference = reference_bot("4 9 10 13")
    assert result.answer == reference.answer and check_game24("4 9 10 13", result.answer)
    assert result.solution_path == reference.solution_path and result.usage == reference.usage
    rounds = bot.last_trace.of_kind("tot_step")
    assert max(s.attributes["calls"] for s in rounds) > 1  # a wave: more than one expansion at once
    assert _overlapping(bot.last_trace) > 1  # ... and their calls ran at the same time
    one_at_a_time = ToTBot(model=oracle_model(latency_s=0.05), branching_factor=2, **GAME)
    one_at_a_time("4 9 10 13")
    assert _overlapping(one_at_a_time.last_trace) == 1


def test_tot_drv_100_concurrent_streams_of_a_wave_reach_the_target_whole():
    pieces: list[str] = []
    bot = ToTBot(model=oracle_model(latency_s=0.01), parallel_expansions=2, branching_factor=2,
                 stream_target=pieces.append, **GAME)
    result = bot("4 9 10 13")
    assert result.answer is not None
    replies = [s.attributes["reply"].content for s in bot.last_trace.of_kind("model_call")]
    assert sorted("".join(pieces)) == sorted("".join(replies))  # every piece of every call, none lost
