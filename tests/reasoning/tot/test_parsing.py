"""Reading thoughts and scores from model text, and the machine's parse retries (TOT-PARSE-*)."""

from __future__ import annotations

import pytest

from llamabot.reasoning.tot.machine import Status, get_children, new_machine, update
from llamabot.reasoning.tot.messages import (
    CallLLMStream,
    EvaluateThoughts,
    GenerateThoughts,
    LLMResult,
    Start,
    ThoughtEntry,
    ThoughtsEvaluated,
    ThoughtsGenerated,
)
from llamabot.reasoning.tot.parsing import parse_continuations, parse_scores, parse_thoughts

THREE = [ThoughtEntry("t1", "alpha"), ThoughtEntry("t2", "beta"), ThoughtEntry("t3", "gamma")]


@pytest.mark.parametrize(
    ("text", "thoughts", "mode"),
    [
        ('{"thoughts": ["a", "b"]}', ["a", "b"], "json"),
        ('{"thoughts": [{"id": "t1", "content": "a"}, {"content": " b "}]}', ["a", "b"], "json"),
        ('["a", "b"]', ["a", "b"], "json"),
        ('Here:\n```json\n{"thoughts": ["a", "b"]}\n```\nDone.', ["a", "b"], "fenced_json"),
        ('Sure! {"thoughts": ["a"]} hope it helps', ["a"], "embedded_json"),
        ("1. first idea\n2) second idea\ncontinued\nStep 3: third", ["first idea", "second idea continued", "third"],
         "numbered"),
        ("no structure at all", [], "none"),
        ('{"thoughts": []}', [], "none"),
        ("", [], "none"),
        (None, [], "none"),
    ],
)
def test_tot_parse_010_parse_thoughts_reads_json_fenced_embedded_and_numbered_replies(text, thoughts, mode):
    assert parse_thoughts(text) == (thoughts, mode)


@pytest.mark.parametrize(
    ("text", "scores", "mode"),
    [
        ('{"scores": {"t1": 0.8, "t2": 0.4, "t3": 1}}', {"t1": 0.8, "t2": 0.4, "t3": 1.0}, "json"),
        ('{"t1": 0.8, "T2": "0.4"}', {"t1": 0.8, "t2": 0.4}, "json"),
        ('{"scores": [0.1, 0.2, 0.3]}', {"t1": 0.1, "t2": 0.2, "t3": 0.3}, "json"),
        ('{"scores": {"1": 0.5, "beta": 0.7, "3": {"score": 0.2}}}', {"t1": 0.5, "t2": 0.7, "t3": 0.2}, "json"),
        ('{"scores": {"t1": "sure", "t2": "likely", "t3": "impossible"}}', {"t1": 1.0, "t2": 0.5, "t3": 0.0},
         "json"),
        ('{"scores": {"t1": 8, "t2": 5, "t3": 0}}', {"t1": 0.8, "t2": 0.5, "t3": 0.0}, "json"),  # 0-10 scale
        ('{"scores": {"t1": 80, "t2": -3}}', {"t1": 0.8, "t2": 0.0}, "json"),  # 0-100 scale, clamped
        ('```json\n{"scores": {"t2": 0.9}}\n```', {"t2": 0.9}, "fenced_json"),
        ('I think {"scores": {"t3": 0.6}} overall', {"t3": 0.6}, "embedded_json"),
        ("1. 0.9\n2: 0.1\nt3 = 0.4", {"t1": 0.9, "t2": 0.1, "t3": 0.4}, "numbered"),
        ("Thought 2: sure\nthought 1: impossible", {"t2": 1.0, "t1": 0.0}, "numbered"),
        ('{"scores": {"t9": 0.5, "t1": NaN}}', {}, "none"),
        ("nothing useful", {}, "none"),
    ],
)
def test_tot_parse_020_parse_scores_reads_ids_indices_contents_labels_and_scales(text, scores, mode):
    assert parse_scores(text, THREE) == (scores, mode)


def test_tot_parse_020_parse_scores_never_invents_a_score_for_a_missing_thought():
    scores, mode = parse_scores('{"scores": {"t1": 0.3}}', ["only", "two"])
    assert scores == {"t1": 0.3} and mode == "json"
    assert parse_scores('{"scores": {"t1": 0.3}}', []) == ({}, "none")


def _started(**options):
    machine, directives = update(new_machine(**options), Start("problem", "run"))
    return machine, directives[0]


def test_tot_parse_030_unreadable_thoughts_are_asked_for_again_with_the_reply_and_the_error():
    machine, request = _started()
    machine, directives = update(machine, LLMResult(request.call_id, text="I cannot list anything"))
    assert machine.status is Status.GENERATING
    repair = directives[0]
    assert isinstance(repair, CallLLMStream) and repair.phase == "generation"
    assert repair.call_id == machine.current_call_id != request.call_id
    assert repair.request == GenerateThoughts(request.call_id, "n0", "problem", (), 3)
    assert repair.raw_text == "I cannot list anything" and "no thoughts" in repair.error
    machine, directives = update(machine, LLMResult(repair.call_id, text='{"thoughts": ["a", "b"]}'))
    assert machine.status is Status.EVALUATING and machine.parse_retries == {"generation": 1, "evaluation": 0}


def test_tot_parse_030_a_node_whose_thoughts_stay_unreadable_is_closed_and_the_search_goes_on():
    machine, request = _started(branching_factor=2, max_depth=3, convergence_window=1)
    machine, [d] = update(machine, ThoughtsGenerated(request.call_id, ("a", "b")))
    machine, [d] = update(machine, ThoughtsEvaluated(d.call_id, {"t1": 0.9, "t2": 0.5}))
    assert d.path == ("a",)
    machine, [d] = update(machine, LLMResult(d.call_id, text="garbage"))
    machine, [d] = update(machine, LLMResult(d.call_id, text="garbage again"))
    assert isinstance(d, GenerateThoughts) and d.path == ("b",)  # "a" closed, "b" expanded
    assert machine.closed_nodes == ("n1",) and "generation_parse_failed" in machine.parser_errors


def test_tot_parse_040_an_unreadable_score_uses_the_retry_budget_before_any_fallback():
    machine, request = _started()
    machine, [evaluate] = update(machine, ThoughtsGenerated(request.call_id, ("a", "b", "c")))
    machine, [repair] = update(machine, LLMResult(evaluate.call_id, text="they all look fine"))
    assert isinstance(repair, CallLLMStream) and repair.phase == "evaluation"
    assert repair.request == evaluate and "t1, t2, t3" in repair.error
    assert machine.status is Status.EVALUATING and machine.nodes["n0"].children == ()  # nothing defaulted yet
    machine, _ = update(machine, LLMResult(repair.call_id, text='{"scores": {"t1": 0.9, "t2": 0.2, "t3": 0.4}}'))
    assert [c.score for c in get_children(machine, "n0")] == [0.9, 0.2, 0.4]


def test_tot_parse_040_once_the_budget_is_spent_missing_scores_fall_back_and_the_diagnostics_say_so():
    machine, request = _started()
    machine, [evaluate] = update(machine, ThoughtsGenerated(request.call_id, ("a", "b", "c")))
    machine, [repair] = update(machine, LLMResult(evaluate.call_id, text='{"scores": {"t1": 0.9}}'))
    assert "t2, t3" in repair.error  # a partial reply is a parse failure too
    machine, _ = update(machine, LLMResult(repair.call_id, text='{"scores": {"t2": 0.3}}'))
    assert [c.score for c in get_children(machine, "n0")] == [0.5, 0.3, 0.5]
    assert machine.parser_errors == ("evaluation_parse_retry", "evaluation_fallback")
    machine, [evaluate] = update(new_machine(max_parse_retries=0), Start("p", "r"))
    machine, [evaluate] = update(machine, ThoughtsGenerated(evaluate.call_id, ("a",)))
    machine, _ = update(machine, LLMResult(evaluate.call_id, text="?"))
    assert get_children(machine, "n0")[0].score == 0.5 and machine.parser_mode == "default"


def test_tot_parse_050_the_retry_budget_is_per_request():
    machine, request = _started(branching_factor=1, convergence_window=1, max_depth=3)
    machine, [d] = update(machine, LLMResult(request.call_id, text="?"))  # retry 1, root generation
    machine, [d] = update(machine, LLMResult(d.call_id, text="1. a"))
    assert isinstance(d, EvaluateThoughts)
    machine, [d] = update(machine, LLMResult(d.call_id, text="?"))  # retry 1, root evaluation
    machine, [d] = update(machine, LLMResult(d.call_id, text="1. 0.5"))
    machine, [d] = update(machine, LLMResult(d.call_id, text="?"))  # the next request has its own retry
    assert isinstance(d, CallLLMStream) and d.request.path == ("a",)
    assert machine.parse_retries == {"generation": 2, "evaluation": 1}


@pytest.mark.parametrize(("text", "found"), [
    ('{"scores": {"t1": 1}, "next": {"t1": ["17 + 7 = 24"]}}', {"t1": ("17 + 7 = 24",)}),
    ('{"scores": {"t1": 1}, "next": {"2": [" b ", "b", "", 3, "c"]}}', {"t2": ("b", "c")}),  # by index; text only, once
    ('{"scores": {"t1": 1}, "next": {"t9": ["x"], "t1": "not a list"}}', {}),  # unknown id, not a list
    ('{"scores": {"t1": 1}}', {}),
    ('{"next": ["x"]}', {}),
    ('```json\n{"next": {"t1": ["x"]}}\n```', {}),  # only a reply that is one JSON object carries any
    ("not JSON", {}),
    ("", {}),
])
def test_tot_parse_060_parse_continuations_reads_next_steps_by_thought_and_nothing_else(text, found):
    assert parse_continuations(text, ["a", "b"]) == found
