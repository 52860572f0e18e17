"""The ToT state machine's transition rules, without a model (TOT-MACH-*)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from llamabot.reasoning.tot.machine import (
    BUSY,
    TRANSITIONS,
    Env,
    Status,
    TerminationReason,
    ToTError,
    ToTOptions,
    get_children,
    new_machine,
    update,
)
from llamabot.reasoning.tot.messages import (
    EvaluateThoughts,
    GenerateThoughts,
    LLMPartial,
    LLMResult,
    RequestError,
    Start,
    ThoughtEntry,
    ThoughtsEvaluated,
    ThoughtsGenerated,
)
from llamabot.reasoning.tot.persist import from_dict, to_dict
from llamabot.reasoning.tot.result import build_result
from llamabot.reasoning.tot.tree import ThoughtNode


def started(**options):
    machine, directives = update(new_machine(**options), Start("problem", "run"))
    return machine, directives[0]


def evaluating(**options):
    machine, d = started(**options)
    machine, directives = update(machine, ThoughtsGenerated(d.call_id, ("a", "b", "c")))
    return machine, directives[0]


def test_tot_mach_010_a_new_machine_is_idle_and_only_the_allowed_transitions_exist():
    machine = new_machine()
    assert machine.status is Status.IDLE and machine.nodes == {} and machine.termination_reason is None
    assert set(TRANSITIONS) == set(Status)
    assert TRANSITIONS[Status.IDLE] == {Status.GENERATING}
    assert TRANSITIONS[Status.GENERATING] == {Status.EVALUATING, Status.EXPANDING, Status.COMPLETED, Status.ERROR}
    assert TRANSITIONS[Status.EVALUATING] == {Status.EXPANDING, Status.COMPLETED, Status.ERROR}
    assert TRANSITIONS[Status.EXPANDING] == {Status.GENERATING, Status.COMPLETED, Status.ERROR}
    assert TRANSITIONS[Status.COMPLETED] == frozenset() == TRANSITIONS[Status.ERROR]
    assert BUSY == {Status.GENERATING, Status.EVALUATING, Status.EXPANDING}


def test_tot_mach_020_start_creates_the_root_and_asks_for_branching_factor_thoughts():
    machine, directives = update(new_machine(branching_factor=4), Start("solve x", "run-1"), Env(now_ms=1000.0))
    assert machine.nodes == {"n0": ThoughtNode("n0", None, "solve x", None, (), 0)}
    assert machine.status is Status.GENERATING
    assert (machine.root_id, machine.current_node_id, machine.current_call_id) == ("n0", "n0", "run-1")
    assert machine.started_at_ms == 1000.0
    assert directives == [GenerateThoughts("run-1", "n0", "solve x", (), 4)]


@pytest.mark.parametrize("state", ["generating", "evaluating"])
def test_tot_mach_030_start_while_busy_gets_request_error_busy_and_changes_nothing(state):
    machine, _ = started() if state == "generating" else evaluating()
    after, directives = update(machine, Start("another problem", "run-2"))
    assert after is machine
    assert len(directives) == 1 and isinstance(directives[0], RequestError)
    assert (directives[0].call_id, directives[0].reason) == ("run-2", "busy")
    assert state in directives[0].message


def test_tot_mach_030_start_after_the_end_or_with_an_empty_problem_is_refused():
    machine, d = started()
    done, _ = update(machine, LLMResult(d.call_id, error="down"))
    assert update(done, Start("again", "run-2"))[1][0].reason == "finished"
    idle = new_machine()
    after, directives = update(idle, Start("   ", "run-3"))
    assert after is idle and directives[0].reason == "invalid"


def test_tot_mach_040_stale_call_ids_and_out_of_place_messages_are_ignored():
    machine, d = started()
    for msg in (
        ThoughtsGenerated("stale", ("a",)),
        LLMResult("stale", text='{"thoughts": ["a"]}'),
        LLMResult("stale", error="boom"),
        LLMPartial("stale", "x"),
        ThoughtsEvaluated(d.call_id, {"t1": 0.5}),  # right id, wrong state (generating)
    ):
        assert update(machine, msg) == (machine, [])
    idle = new_machine()
    assert update(idle, LLMResult("run", text="x")) == (idle, [])
    with pytest.raises(ToTError, match="not a Tree-of-Thoughts message"):
        update(machine, "start")  # type: ignore[arg-type]


def test_tot_mach_050_generated_thoughts_are_sent_for_evaluation_with_ids_problem_and_path():
    machine, d = started(branching_factor=3)
    machine, directives = update(machine, ThoughtsGenerated(d.call_id, (" a ", "b", "", "a", "c", "d")))
    assert machine.status is Status.EVALUATING
    entries = (ThoughtEntry("t1", "a"), ThoughtEntry("t2", "b"), ThoughtEntry("t3", "c"))  # cleaned, deduped, cut
    assert machine.pending_thoughts == entries
    assert machine.current_call_id not in (None, d.call_id)
    assert directives == [EvaluateThoughts(machine.current_call_id, "n0", "problem", (), entries)]


def test_tot_mach_060_scored_thoughts_become_children_one_level_deeper_and_the_search_goes_on():
    machine, d = evaluating()
    machine, directives = update(machine, ThoughtsEvaluated(d.call_id, {"t1": 0.2, "t2": 1.7, "t3": -1.0}))
    children = get_children(machine, "n0")
    assert [(c.content, c.score, c.depth, c.parent_id) for c in children] == [
        ("a", 0.2, 1, "n0"), ("b", 1.0, 1, "n0"), ("c", 0.0, 1, "n0"),
    ]
    assert machine.nodes["n0"].children == tuple(c.id for c in children)
    assert machine.status is Status.GENERATING and machine.pending_thoughts == ()
    assert directives == [GenerateThoughts(machine.current_call_id, children[1].id, "problem", ("b",), 3)]


def test_tot_mach_070_model_replies_are_parsed_for_thoughts_and_for_scores():
    machine, d = started()
    machine, directives = update(machine, LLMResult(d.call_id, text='{"thoughts": ["a", "b", "c"]}'))
    assert machine.parser_mode == "json" and [t.content for t in machine.pending_thoughts] == ["a", "b", "c"]
    machine, _ = update(machine, LLMResult(directives[0].call_id, text="1. 0.9\n2. 0.1\n3. 0.5"))
    assert machine.parser_mode == "numbered"
    assert [c.score for c in get_children(machine, "n0")] == [0.9, 0.1, 0.5]


def test_tot_mach_070_a_reply_without_text_uses_the_streamed_text():
    machine, d = started()
    for piece in ('{"thoughts": ', '["a", "b"]}'):
        machine, _ = update(machine, LLMPartial(d.call_id, piece))
    machine, directives = update(machine, LLMResult(d.call_id, text=None))
    assert [t.content for t in machine.pending_thoughts] == ["a", "b"]
    assert machine.streaming_text == ""


def test_tot_mach_080_a_failed_model_call_ends_the_search_in_error():
    machine, d = evaluating()
    machine, directives = update(machine, LLMResult(d.call_id, error="ConnectionError: down"), Env(now_ms=5.0))
    assert directives == []
    assert machine.status is Status.ERROR and machine.termination_reason is TerminationReason.ERROR
    assert "ConnectionError: down" in machine.error and machine.current_call_id is None
    result = build_result(machine)
    assert result.termination.reason == "error" and result.best is None and not result.solved
    assert "down" in result.diagnostics["error"]


def test_tot_mach_090_partials_accumulate_for_the_current_call_only():
    machine, d = started()
    machine, _ = update(machine, LLMPartial(d.call_id, "ab"))
    machine, _ = update(machine, LLMPartial(d.call_id, "cd"))
    machine, _ = update(machine, LLMPartial(d.call_id, "zz", chunk_type="thinking"))
    machine, _ = update(machine, LLMPartial("stale", "zz"))
    assert machine.streaming_text == "abcd"


def test_tot_mach_100_usage_accumulates_over_every_model_reply():
    machine, d = started()
    usage = {"prompt_tokens": 10, "completion_tokens": 5}
    machine, directives = update(machine, LLMResult(d.call_id, text="1. a\n2. b", usage=usage))
    machine, _ = update(machine, LLMResult(directives[0].call_id, error="down", usage={"prompt_tokens": 7}))
    assert machine.usage == {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}
    assert build_result(machine).usage == machine.usage


def test_tot_mach_110_update_never_mutates_its_argument_and_machines_are_frozen():
    machine, d = evaluating()
    snapshot = json.dumps(to_dict(machine), sort_keys=True)
    update(machine, ThoughtsEvaluated(d.call_id, {"t1": 0.5, "t2": 0.5, "t3": 0.5}))
    update(machine, LLMPartial(d.call_id, "x"))
    assert json.dumps(to_dict(machine), sort_keys=True) == snapshot
    with pytest.raises(dataclasses.FrozenInstanceError):
        machine.status = Status.ERROR  # type: ignore[misc]


def test_tot_mach_120_to_dict_and_from_dict_round_trip_through_json_and_resume_identically():
    machine, d = evaluating(branching_factor=3, traversal_strategy="bfs", beam_width=2, max_duration_ms=5000)
    data = json.loads(json.dumps(to_dict(machine)))
    restored = from_dict(data)
    assert restored == machine
    msg = ThoughtsEvaluated(d.call_id, {"t1": 0.1, "t2": 0.9, "t3": 0.5})
    assert update(restored, msg, Env(now_ms=1.0)) == update(machine, msg, Env(now_ms=1.0))
    assert from_dict(to_dict(new_machine())) == new_machine()


def test_tot_mach_120_from_dict_rejects_what_it_cannot_restore_naming_it():
    with pytest.raises(ToTError, match="'paused'"):
        from_dict({"status": "paused"})
    with pytest.raises(ToTError, match="branching_factor"):
        from_dict({"options": {"branching_factor": 0}})
    with pytest.raises(ToTError, match="cannot restore"):
        from_dict({"nodes": [{"content": "no id"}]})


def test_tot_mach_130_options_have_the_seed_defaults():
    assert ToTOptions().to_dict() == {
        "branching_factor": 3, "max_depth": 3, "traversal_strategy": "best_first", "top_k": 3, "min_depth": 2,
        "max_nodes": 100, "max_duration_ms": None, "max_model_calls": None, "beam_width": None,
        "early_success_threshold": 1.0,
        "convergence_window": 2, "min_score_improvement": 0.02, "max_parse_retries": 1, "prefer_deeper": False,
        "parallel_expansions": 1,
    }


@pytest.mark.parametrize(
    ("option", "value"),
    [("branching_factor", 0), ("max_depth", 0), ("traversal_strategy", "random"), ("top_k", 0), ("max_nodes", 1),
     ("min_depth", 5), ("beam_width", 0), ("max_duration_ms", 0), ("max_parse_retries", -1), ("max_model_calls", 1),
     ("parallel_expansions", 0),
     ("convergence_window", 0), ("early_success_threshold", -0.1)],
)
def test_tot_mach_130_invalid_options_raise_tot_error_naming_the_option(option, value):
    with pytest.raises(ToTError, match=option):
        ToTOptions(**{option: value})


# -- waves: several frontier nodes expanded side by side (TOT-MACH-150) ----------------------------------------


def test_tot_mach_150_a_wave_expands_the_best_frontier_nodes_and_the_next_waits_for_all_of_it():
    machine, d = started(branching_factor=3, parallel_expansions=2, max_depth=3, min_depth=3)
    machine, [ev] = update(machine, ThoughtsGenerated(d.call_id, ("a", "b", "c")))
    machine, wave = update(machine, ThoughtsEvaluated(ev.call_id, {"t1": 0.2, "t2": 0.9, "t3": 0.5}))
    assert [type(x) for x in wave] == [GenerateThoughts, GenerateThoughts]
    assert [x.path for x in wave] == [("b",), ("c",)]  # the two best, best first
    assert machine.status is Status.GENERATING and [e.node_id for e in machine.active] == [x.node_id for x in wave]
    assert [machine.nodes[n].content for n in machine.frontier] == ["a"]
    g1, g2 = wave
    machine, [e1] = update(machine, ThoughtsGenerated(g1.call_id, ("x",)))
    assert machine.status is Status.GENERATING  # the other expansion still waits for its thoughts
    machine, [e2] = update(machine, ThoughtsGenerated(g2.call_id, ("y", "z")))
    assert machine.status is Status.EVALUATING and machine.current_call_id == e1.call_id
    machine, out = update(machine, ThoughtsEvaluated(e2.call_id, {"t1": 0.1, "t2": 0.3}))
    assert out == [] and [e.call_id for e in machine.active] == [e1.call_id]  # no wave before this one has ended
    machine, out = update(machine, ThoughtsEvaluated(e1.call_id, {"t1": 0.4}))
    assert [x.path for x in out] == [("b", "x"), ("c", "z")]  # the best of the whole frontier: 0.4, 0.3
    assert len({x.call_id for x in out}) == 2 and machine.status is Status.GENERATING


def test_tot_mach_150_an_answer_ends_the_search_and_a_late_reply_only_adds_its_usage():
    machine, d = started(branching_factor=2, parallel_expansions=2, max_depth=2, min_depth=2)
    machine, [ev] = update(machine, ThoughtsGenerated(d.call_id, ("a", "b")))
    machine, (g1, g2) = update(machine, ThoughtsEvaluated(ev.call_id, {"t1": 0.5, "t2": 0.5}))
    machine, [e1] = update(machine, ThoughtsGenerated(g1.call_id, ("x",)))
    machine, out = update(machine, ThoughtsEvaluated(e1.call_id, {"t1": 1.0}))
    assert out == [] and machine.status is Status.COMPLETED and machine.termination_reason is TerminationReason.THRESHOLD
    assert machine.abandoned_calls == (g2.call_id,) and machine.active == ()
    late = LLMResult(g2.call_id, text='{"thoughts": ["q"]}', usage={"prompt_tokens": 5, "completion_tokens": 1})
    after, out = update(machine, late)
    assert out == [] and after.nodes == machine.nodes and after.abandoned_calls == ()
    assert after.usage["total_tokens"] == machine.usage.get("total_tokens", 0) + 6
    assert update(after, late) == (after, [])  # the same reply twice counts once


def test_tot_mach_150_a_wave_never_starts_what_the_call_and_node_budgets_cannot_finish():
    machine, d = started(branching_factor=2, parallel_expansions=3, max_depth=3, min_depth=3, max_model_calls=5)
    machine, [ev] = update(machine, ThoughtsGenerated(d.call_id, ("a", "b")))
    machine, wave = update(machine, ThoughtsEvaluated(ev.call_id, {"t1": 0.5, "t2": 0.5}))
    assert len(wave) == 1  # 3 calls left: one generation and its evaluation fit, two do not
    machine, d = started(branching_factor=3, parallel_expansions=3, max_depth=3, min_depth=3, max_nodes=6)
    machine, [ev] = update(machine, ThoughtsGenerated(d.call_id, ("a", "b", "c")))
    machine, wave = update(machine, ThoughtsEvaluated(ev.call_id, {"t1": 0.5, "t2": 0.5, "t3": 0.5}))
    assert [x.count for x in wave] == [2]  # 4 nodes of 6: the first expansion holds the last two


def test_tot_mach_150_a_repair_in_a_wave_keeps_the_evaluations_the_others_still_need():
    machine, d = started(branching_factor=2, parallel_expansions=2, max_depth=3, min_depth=3, max_model_calls=6)
    machine, [ev] = update(machine, ThoughtsGenerated(d.call_id, ("a", "b")))
    machine, (g1, g2) = update(machine, ThoughtsEvaluated(ev.call_id, {"t1": 0.5, "t2": 0.5}))
    # 6 calls asked: g1 and g2 still need an evaluation each, so an unreadable reply gets no repair
    machine, out = update(machine, LLMResult(g1.call_id, text="garbage"))
    assert out == [] and "generation_parse_failed" in machine.parser_errors
    assert [e.call_id for e in machine.active] == [g2.call_id]


def _rules(problem, path, thought):
    return None if thought.startswith("ok") else f"{thought} breaks a rule"


def test_tot_mach_160_next_steps_an_evaluation_wrote_are_filed_as_the_candidates_children():
    env = Env(step_check=_rules)
    machine, (generate,) = update(new_machine(branching_factor=2, max_depth=2, min_depth=2), Start("p", "run"), env)
    machine, (evaluate,) = update(machine, ThoughtsGenerated(generate.call_id, ("ok a", "ok b")), env)
    reply = {"scores": {"t1": 0.5, "t2": 1}, "next": {"t2": ["ok b1", "bad b2", "ok b1"], "t9": ["ok x"]}}
    machine, out = update(machine, LLMResult(evaluate.call_id, text=json.dumps(reply)), env)
    # t2's step is its child, scored as t2 (the evaluator's judgement); the broken one is recorded, not filed
    (a, b), = [get_children(machine, machine.root_id)]
    (b1,) = get_children(machine, b.id)
    assert (b1.content, b1.score, b1.depth, b1.parent_id) == ("ok b1", 1.0, 2, b.id)
    assert get_children(machine, a.id) == [] and machine.continued_nodes == (b1.id,)
    assert machine.rejected_steps == ("bad b2 breaks a rule",)
    # a sure step at min_depth ends the search at once: no call to write the last step again
    assert out == [] and machine.termination_reason is TerminationReason.THRESHOLD
    assert machine.solution_path[-1] == b1.id
    assert from_dict(to_dict(machine)) == machine  # the record is part of the saved state


def test_tot_mach_160_continuations_keep_the_depth_and_node_budgets_and_come_by_message_too():
    machine, d = started(branching_factor=2, max_depth=1, min_depth=1)
    machine, [ev] = update(machine, ThoughtsGenerated(d.call_id, ("a", "b")))
    machine, _ = update(machine, ThoughtsEvaluated(ev.call_id, {"t1": 0.2, "t2": 0.4}, {"t1": ("deeper",)}))
    assert len(machine.nodes) == 3 and machine.continued_nodes == ()  # the candidates are at max_depth already
    machine, d = started(branching_factor=2, max_depth=3, min_depth=3, max_nodes=4)
    machine, [ev] = update(machine, ThoughtsGenerated(d.call_id, ("a", "b")))
    machine, _ = update(machine, ThoughtsEvaluated(ev.call_id, {"t1": 0.5, "t2": 0.5}, {"t1": ("a1", "a2")}))
    assert len(machine.nodes) == 4 and [machine.nodes[n].content for n in machine.continued_nodes] == ["a1"]
    first = machine.nodes[machine.continued_nodes[0]]
    assert first.depth == 2 and first.id in machine.frontier  # below max_depth: open like any other child
