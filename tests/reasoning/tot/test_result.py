"""The result of a search, the tree functions and the generic prompts (TOT-RES-*, TOT-PROMPT-*)."""

from __future__ import annotations

import json
from dataclasses import replace

from llamabot.reasoning.tot.machine import (
    find_best_leaf,
    find_leaves,
    get_children,
    get_node,
    get_path_to_node,
    new_machine,
)
from llamabot.reasoning.tot.messages import CallLLMStream, EvaluateThoughts, GenerateThoughts, ThoughtEntry
from llamabot.reasoning.tot.prompts import ToTPrompts
from llamabot.reasoning.tot.result import build_result
from tests.reasoning.tot.helpers import drive

SCORES = {"a": 0.9, "b": 0.3, "a.x": 0.4, "a.y": 0.8, "b.x": 0.95}


def explored():
    def generate(d):
        return [f"{d.path[-1]}.x" if d.path else "a", f"{d.path[-1]}.y" if d.path else "b"][: d.count]

    def evaluate(d):
        return {t.id: SCORES.get(t.content, 0.1) for t in d.thoughts}

    options = {"branching_factor": 2, "max_depth": 2, "min_depth": 2, "top_k": 2, "convergence_window": 1,
               "early_success_threshold": 2.0, "traversal_strategy": "bfs"}
    machine, _ = drive(new_machine(**options), generate, evaluate)
    return machine


def test_tot_res_010_the_result_has_best_top_k_candidates_with_paths_termination_usage_and_diagnostics():
    machine = explored()
    result = build_result(machine, answer="the answer")
    assert result.best.content == "b.x" and result.best.path_text == ("b", "b.x")
    assert result.best.path_ids == result.solution_path and result.solution_path[0] == machine.root_id
    assert [c.content for c in result.candidates] == ["b.x", "a.y"]  # top_k = 2, best first
    assert result.termination.reason == "max_depth" and result.termination.node_count == 7
    assert result.termination.depth_reached == 2 and result.solved and result.answer == "the answer"
    assert result.solution_text == ("b", "b.x")
    assert set(result.diagnostics) >= {"parser_mode", "parse_retries", "parser_errors", "convergence", "tree",
                                       "best_node_id", "error", "closed_nodes"}
    assert result.diagnostics["tree"]["traversal_strategy"] == "bfs"
    data = json.loads(json.dumps(result.to_dict()))
    assert data["best"]["content"] == "b.x" and data["termination"]["status"] == "completed"


def test_tot_res_020_tree_functions_read_nodes_children_paths_and_leaves():
    machine = explored()
    root = get_node(machine, machine.root_id)
    assert root.content == "problem" and get_node(machine, "nope") is None
    assert [c.content for c in get_children(machine, root.id)] == ["a", "b"]
    assert get_children(machine, "nope") == []
    leaf = next(n for n in machine.nodes.values() if n.content == "a.y")
    assert [n.content for n in get_path_to_node(machine, leaf.id)] == ["problem", "a", "a.y"]
    assert get_path_to_node(machine, "nope") == []
    assert sorted(n.content for n in find_leaves(machine)) == ["a.x", "a.y", "b.x", "b.y"]
    assert find_best_leaf(machine).content == "b.x"
    assert find_best_leaf(new_machine()) is None


def test_tot_res_020_leaves_deep_enough_to_be_answers_rank_first():
    machine = explored()
    shallow = get_node(machine, "n1")
    assert shallow.content == "a"
    nodes = {**machine.nodes, "n9": replace(shallow, id="n9", children=(), score=1.0)}  # a shallow 1.0 leaf
    trimmed = replace(machine, nodes=nodes)
    assert find_best_leaf(trimmed).content == "b.x"  # min_depth 2: the depth-1 leaf is not an answer yet
    assert find_best_leaf(trimmed, min_depth=0).id == "n9"


def test_tot_prompt_010_requests_ask_for_json_matching_a_schema():
    prompts = ToTPrompts()
    generate = GenerateThoughts("c1", "n0", "p", (), 3)
    evaluate = EvaluateThoughts("c2", "n0", "p", (), (ThoughtEntry("t1", "a"), ThoughtEntry("t2", "b")))
    thoughts = prompts.response_format(generate)["json_schema"]
    assert thoughts["name"] == "tot_thoughts" and thoughts["schema"]["properties"]["thoughts"]["maxItems"] == 3
    scores = prompts.response_format(evaluate)["json_schema"]["schema"]["properties"]["scores"]
    assert scores["required"] == ["t1", "t2"] and scores["additionalProperties"] is False
    assert [m["role"] for m in prompts.messages(generate)] == ["system", "user"]
    assert "Propose 3 different first steps." in prompts.messages(generate)[1]["content"]


def test_tot_prompt_020_a_repair_repeats_the_request_then_the_reply_and_the_error():
    prompts = ToTPrompts()
    evaluate = EvaluateThoughts("c2", "n0", "p", ("step",), (ThoughtEntry("t1", "a"), ThoughtEntry("t2", "b")))
    repair = CallLLMStream("c3", "evaluation", evaluate, "all fine", "no score could be read for t1, t2")
    messages = prompts.messages(repair)
    assert messages[:2] == prompts.messages(evaluate)
    assert messages[2] == {"role": "assistant", "content": "all fine"}
    assert "no score could be read for t1, t2" in messages[3]["content"] and '"t2": <score' in messages[3]["content"]
    assert prompts.response_format(repair) == prompts.response_format(evaluate)
    assert prompts.answer("p", ("x", "y")) == "y" and prompts.answer("p", ()) is None
