"""Any sequence of messages leaves the machine in an allowed state with a consistent tree (TOT-MACH-140)."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from llamabot.reasoning.tot.machine import (
    TRANSITIONS,
    Env,
    Status,
    TerminationReason,
    ToTMachine,
    ToTOptions,
    get_path_to_node,
    model_calls,
    new_machine,
    update,
)
from llamabot.reasoning.tot.messages import LLMPartial, LLMResult, Start, ThoughtsEvaluated, ThoughtsGenerated
from llamabot.reasoning.tot.persist import from_dict, to_dict

REPLIES = [
    '{"thoughts": ["a", "b", "c"]}', '```json\n{"thoughts": ["x", "y"]}\n```', "1. p\n2. q\n3. r", "garbage", "",
    '{"scores": {"t1": 0.9, "t2": 0.1, "t3": 0.5}}', '{"scores": {"t1": 1.0}}', "1. 0.3\n2. 0.8\n3. 7",
    "t2: sure", '{"scores": [0.2, 0.95, 0.4, 0.1]}', '{"scores": {"t1": 1, "t2": 0}, "next": {"t1": ["n", "n", "m"]}}',
]

options = st.builds(
    lambda bf, depth, min_frac, strategy, nodes, beam, window, retries, threshold, duration, wave, calls: ToTOptions(
        branching_factor=bf, max_depth=depth, min_depth=round(depth * min_frac), traversal_strategy=strategy,
        max_nodes=nodes, beam_width=beam, convergence_window=window, max_parse_retries=retries,
        early_success_threshold=threshold, max_duration_ms=duration, parallel_expansions=wave,
        max_model_calls=calls,
    ),
    st.integers(1, 4), st.integers(1, 4), st.floats(0, 1), st.sampled_from(["bfs", "dfs", "best_first"]),
    st.integers(2, 25), st.one_of(st.none(), st.integers(1, 3)), st.integers(1, 3), st.integers(0, 2),
    st.sampled_from([0.5, 0.9, 1.0, 2.0]), st.one_of(st.none(), st.floats(50, 500)), st.integers(1, 3),
    st.one_of(st.none(), st.integers(2, 14)),
)

stale = st.integers(0, 4).map(lambda n: n == 0)  # one message in five carries a stale call id
# "fit" answers whatever the machine waits for (distinct thoughts, or a score per pending thought), so
# sequences reach deep trees and every termination reason; the other kinds are arbitrary.
fit = st.tuples(st.just("fit"), st.lists(st.floats(0, 1), min_size=4, max_size=4), st.integers(0, 3), stale)
steps = st.one_of(
    fit, fit, fit,
    st.tuples(st.just("start"), st.text(max_size=3)),  # no stale flag: start carries its own id
    st.tuples(st.just("result"), st.sampled_from(REPLIES), st.integers(0, 9).map(lambda n: n == 0), stale),
    st.tuples(st.just("generated"), st.lists(st.sampled_from(["a", "b", "c", "", "a "]), max_size=5), stale),
    st.tuples(
        st.just("evaluated"),
        st.dictionaries(st.sampled_from(["t1", "t2", "t3", "t4", "x"]),
                        st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=5),
        stale,
    ),
    st.tuples(st.just("partial"), st.text(max_size=4), stale),
)


def message(machine: ToTMachine, step: tuple, pick: int = 0):
    """The message ``step`` describes, for the expansion ``pick`` (modulo those in flight)."""
    kind = step[0]
    if kind == "start":
        return Start(step[1] or "problem", "run")
    exp = machine.active[pick % len(machine.active)] if machine.active else None
    call_id = "stale-id" if step[-1] else (exp.call_id if exp else "none")
    if kind == "result":
        usage = {"prompt_tokens": 3, "completion_tokens": 2}
        if step[2]:
            return LLMResult(call_id, error="down", usage=usage)
        return LLMResult(call_id, text=step[1], usage=usage)
    if kind == "fit":
        if exp is not None and exp.phase == "evaluation":
            pending = exp.pending_thoughts
            scores = {t.id: v for t, v in zip(pending, step[1][: len(pending)], strict=True)}
            steps = tuple(f"{len(machine.nodes)}.c{i}" for i in range(step[2]))  # next steps for the first one
            return ThoughtsEvaluated(call_id, scores, {pending[0].id: steps} if steps else {})
        return ThoughtsGenerated(call_id, tuple(f"{len(machine.nodes)}.{i}" for i in range(step[2] + 1)))
    if kind == "generated":
        return ThoughtsGenerated(call_id, tuple(step[1]))
    if kind == "evaluated":
        return ThoughtsEvaluated(call_id, step[1])
    return LLMPartial(call_id, step[1])


def reachable(before: Status, after: Status) -> bool:
    via_expanding = Status.EXPANDING in TRANSITIONS[before] and after in TRANSITIONS[Status.EXPANDING]
    return after is before or after in TRANSITIONS[before] or via_expanding


def assert_consistent(machine: ToTMachine) -> None:
    o = machine.options
    assert machine.status is not Status.EXPANDING  # transient, never seen between updates
    assert len(machine.nodes) <= o.max_nodes
    for node in machine.nodes.values():
        if node.parent_id is None:
            assert node.id == machine.root_id and node.depth == 0 and node.score is None
        else:
            parent = machine.nodes[node.parent_id]
            assert node.id in parent.children  # every child's parent lists it
            assert node.depth == parent.depth + 1
            assert node.score is not None and 0.0 <= node.score <= 1.0 and not math.isnan(node.score)
            assert node.depth <= o.max_depth
        assert len(set(node.children)) == len(node.children)
        assert all(machine.nodes[child].parent_id == node.id for child in node.children)
    assert all(n in machine.nodes and machine.nodes[n].depth < o.max_depth for n in machine.frontier)
    assert all(n in machine.nodes and machine.nodes[n].depth >= 2 for n in machine.continued_nodes)
    assert len(set(machine.frontier)) == len(machine.frontier)
    if o.beam_width and o.traversal_strategy.value == "best_first":
        assert len(machine.frontier) <= o.beam_width
    assert len(machine.active) <= o.parallel_expansions
    assert o.max_model_calls is None or model_calls(machine) <= o.max_model_calls  # budgets are never exceeded
    if machine.status in (Status.GENERATING, Status.EVALUATING):
        assert machine.active and all(e.node_id in machine.nodes for e in machine.active)
        assert len({e.call_id for e in machine.active}) == len(machine.active)
        assert len({e.node_id for e in machine.active}) == len(machine.active)
        assert not set(machine.frontier) & {e.node_id for e in machine.active}
        assert (machine.status is Status.EVALUATING) == all(e.phase == "evaluation" for e in machine.active)
        assert all((e.phase == "evaluation") == bool(e.pending_thoughts) for e in machine.active)
    else:
        assert machine.active == ()
    if machine.status is Status.COMPLETED:
        path = [n.id for n in get_path_to_node(machine, machine.solution_path[-1])]
        assert tuple(path) == machine.solution_path and path[0] == machine.root_id
        assert machine.termination_reason not in (None, TerminationReason.ERROR)
    if machine.status is Status.ERROR:
        assert machine.termination_reason is TerminationReason.ERROR and machine.error


@settings(max_examples=300, deadline=None)
@given(options=options, sequence=st.lists(steps, min_size=10, max_size=60), use_goal=st.booleans(),
       ticks=st.lists(st.floats(0, 100), min_size=61, max_size=61),
       picks=st.lists(st.integers(0, 2), min_size=61, max_size=61))
def test_tot_mach_140_any_message_sequence_leaves_an_allowed_state_and_a_consistent_tree(
    options, sequence, use_goal, ticks, picks
):
    goal = (lambda problem, path: path[-1:] == ("b",)) if use_goal else None
    machine, now = new_machine(options), 0.0
    for step, tick, pick in zip([("start", "problem"), *sequence], ticks[: len(sequence) + 1],
                                picks[: len(sequence) + 1], strict=True):
        now += tick
        before, snapshot = machine, json.dumps(to_dict(machine), sort_keys=True)
        machine, directives = update(machine, message(machine, step, pick), Env(now_ms=now, goal_test=goal))
        assert json.dumps(to_dict(before), sort_keys=True) == snapshot  # the input is never mutated
        assert reachable(before.status, machine.status), (before.status, machine.status)
        assert_consistent(machine)
        assert from_dict(json.loads(json.dumps(to_dict(machine)))) == machine
        assert len(directives) <= options.parallel_expansions
