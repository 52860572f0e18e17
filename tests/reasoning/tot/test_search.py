"""Traversal orders, beam trimming and every termination reason, without a model (TOT-SEARCH-*, TOT-TERM-*)."""

from __future__ import annotations

from llamabot.reasoning.tot.machine import (
    Env,
    Status,
    TerminationReason,
    get_node,
    model_calls,
    new_machine,
    update,
)
from llamabot.reasoning.tot.messages import (
    GenerateThoughts,
    LLMResult,
    Start,
    ThoughtsEvaluated,
    ThoughtsGenerated,
)
from llamabot.reasoning.tot.result import build_result
from tests.reasoning.tot.helpers import drive

# No early stop unless a test asks for one: threshold out of reach, convergence off, a large budget.
OPEN = {"early_success_threshold": 2.0, "convergence_window": 1, "max_nodes": 1000}


def numbered(d: GenerateThoughts) -> list[str]:
    """Children of path (..., "1.2") are "1.2.1", "1.2.2"...; the root's are "1", "2"..."""
    prefix = f"{d.path[-1]}." if d.path else ""
    return [f"{prefix}{i}" for i in range(1, d.count + 1)]


def scores_from(table: dict[str, float], default: float = 0.5):
    def evaluate(d):
        return {t.id: table.get(t.content, default) for t in d.thoughts}

    return evaluate


def expansions(directives) -> list[tuple[str, ...]]:
    return [d.path for d in directives if isinstance(d, GenerateThoughts)]


def test_tot_search_010_bfs_expands_level_by_level():
    machine, seen = drive(new_machine(branching_factor=2, max_depth=3, traversal_strategy="bfs", **OPEN),
                          numbered, scores_from({}))
    assert expansions(seen) == [(), ("1",), ("2",), ("1", "1.1"), ("1", "1.2"), ("2", "2.1"), ("2", "2.2")]
    assert machine.termination_reason is TerminationReason.MAX_DEPTH and len(machine.nodes) == 15


def test_tot_search_020_dfs_goes_deep_first_and_backtracks_after_max_depth():
    machine, seen = drive(new_machine(branching_factor=2, max_depth=3, traversal_strategy="dfs", **OPEN),
                          numbered, scores_from({}))
    assert expansions(seen) == [(), ("1",), ("1", "1.1"), ("1", "1.2"), ("2",), ("2", "2.1"), ("2", "2.2")]
    assert machine.termination_reason is TerminationReason.MAX_DEPTH


def test_tot_search_030_best_first_always_expands_the_best_scored_open_node():
    table = {"1": 0.5, "2": 0.6, "2.1": 0.3, "2.2": 0.2, "1.1": 0.9, "1.2": 0.4}
    machine, seen = drive(new_machine(branching_factor=2, max_depth=3, **OPEN), numbered, scores_from(table))
    assert expansions(seen) == [(), ("2",), ("1",), ("1", "1.1"), ("1", "1.2"), ("2", "2.1"), ("2", "2.2")]


def test_tot_search_035_prefer_deeper_breaks_score_ties_toward_the_deeper_node():
    # Every thought scores the same: the older node first goes wide, the deeper node first goes down a branch.
    wide, seen_wide = drive(new_machine(branching_factor=2, max_depth=3, **OPEN), numbered, scores_from({}))
    assert expansions(seen_wide)[:3] == [(), ("1",), ("2",)]
    deep, seen_deep = drive(new_machine(branching_factor=2, max_depth=3, prefer_deeper=True, **OPEN), numbered,
                            scores_from({}))
    assert expansions(seen_deep)[:3] == [(), ("1",), ("1", "1.1")]
    # A higher score still wins over depth.
    table = {"1": 0.5, "2": 0.9, "1.1": 0.5, "1.2": 0.5}
    _, seen = drive(new_machine(branching_factor=2, max_depth=3, prefer_deeper=True, **OPEN), numbered,
                    scores_from(table))
    assert expansions(seen)[:2] == [(), ("2",)]
    assert deep.options.prefer_deeper and not wide.options.prefer_deeper


def test_tot_search_035_with_ties_a_perfect_scorer_needs_prefer_deeper_under_a_tight_budget():
    from llamabot.evals.tot import run_tot
    from tests.reasoning.tot.helpers import oracle_model

    # The oracle scores every step that keeps 1 1 4 6 solvable 1: many ties. Five proposals per expansion.
    options = {"branching_factor": 5, "max_depth": 3, "min_depth": 3, "max_nodes": 30, "max_model_calls": 12}
    assert not run_tot(oracle_model(), "1 1 4 6", {**options, "prefer_deeper": False}).solved  # went wide
    deep = run_tot(oracle_model(), "1 1 4 6", {**options, "prefer_deeper": True})
    assert deep.solved and deep.model_calls == 6  # straight down one branch


def test_tot_search_040_a_beam_width_trims_the_best_first_frontier():
    table = {"1": 0.9, "2": 0.8, "3": 0.1, "1.1": 0.2, "1.2": 0.7, "1.3": 0.3}
    machine, seen = drive(new_machine(branching_factor=3, max_depth=2, beam_width=2, **OPEN), numbered,
                          scores_from(table))
    assert expansions(seen) == [(), ("1",), ("2",)]  # "3" fell off the beam at once; depth-2 nodes are leaves
    assert "3" not in [p[-1] for p in expansions(seen) if p]


def test_tot_search_040_the_frontier_never_exceeds_the_beam():
    machine = new_machine(branching_factor=3, max_depth=3, beam_width=2, **OPEN)
    machine, directives = update(machine, Start("p", "run"))
    while directives:
        d = directives[0]
        if isinstance(d, GenerateThoughts):
            machine, directives = update(machine, ThoughtsGenerated(d.call_id, tuple(numbered(d))))
        else:
            machine, directives = update(machine, ThoughtsEvaluated(d.call_id, {t.id: 0.5 for t in d.thoughts}))
        assert len(machine.frontier) <= 2
    assert machine.termination_reason is TerminationReason.MAX_DEPTH


def test_tot_search_050_reaching_max_depth_closes_the_branch_not_the_search():
    # The seed ended the whole search at the first expansion reaching max_depth (DFS followed one path).
    machine = new_machine(branching_factor=2, max_depth=2, **OPEN)
    machine, directives = update(machine, Start("p", "run"))
    machine, directives = update(machine, ThoughtsGenerated(directives[0].call_id, ("1", "2")))
    machine, directives = update(machine, ThoughtsEvaluated(directives[0].call_id, {"t1": 0.9, "t2": 0.5}))
    machine, directives = update(machine, ThoughtsGenerated(directives[0].call_id, ("1.1", "1.2")))
    machine, directives = update(machine, ThoughtsEvaluated(directives[0].call_id, {"t1": 0.9, "t2": 0.1}))
    assert machine.status is Status.GENERATING  # depth-2 children are leaves; "2" is still open
    assert directives == [GenerateThoughts(machine.current_call_id, machine.current_node_id, "p", ("2",), 2)]


def test_tot_term_010_success_when_the_goal_test_accepts_a_thought():
    env = Env(goal_test=lambda problem, path: path[-1] == "1.2")
    machine, _ = drive(new_machine(branching_factor=2, max_depth=3, traversal_strategy="bfs", **OPEN), numbered,
                       scores_from({"1.2": 0.1}), env)
    assert machine.termination_reason is TerminationReason.SUCCESS
    assert [get_node(machine, n).content for n in machine.solution_path] == ["problem", "1", "1.2"]
    assert build_result(machine).best.content == "1.2"  # the verified thought, though it scored low


def test_tot_term_020_threshold_only_counts_thoughts_at_least_min_depth_deep():
    options = {**OPEN, "early_success_threshold": 0.95, "max_depth": 3, "min_depth": 2, "branching_factor": 2}
    table = {"1": 1.0, "1.1": 0.5, "1.2": 0.97}
    machine, seen = drive(new_machine(**options), numbered, scores_from(table, default=0.2))
    assert machine.termination_reason is TerminationReason.THRESHOLD  # "1" scored 1.0 at depth 1: no stop
    assert build_result(machine).best.path_text == ("1", "1.2")


def test_tot_term_030_max_depth_when_the_frontier_runs_out():
    machine, _ = drive(new_machine(branching_factor=1, max_depth=2, **OPEN), numbered, scores_from({}))
    assert machine.termination_reason is TerminationReason.MAX_DEPTH
    assert build_result(machine).termination.depth_reached == 2


def test_tot_term_040_max_nodes_caps_the_tree_and_the_last_request():
    machine, seen = drive(new_machine(branching_factor=3, max_depth=3, **{**OPEN, "max_nodes": 5}), numbered,
                          scores_from({}))
    assert [d.count for d in seen if isinstance(d, GenerateThoughts)] == [3, 1]
    assert machine.termination_reason is TerminationReason.MAX_NODES and len(machine.nodes) == 5


def test_tot_term_050_max_duration_stops_the_search_on_the_callers_clock():
    machine = new_machine(**{**OPEN, "max_duration_ms": 1000})
    machine, directives = update(machine, Start("p", "run"), Env(now_ms=0.0))
    machine, directives = update(machine, ThoughtsGenerated(directives[0].call_id, ("a", "b")), Env(now_ms=400.0))
    machine, directives = update(machine, ThoughtsEvaluated(directives[0].call_id, {"t1": 0.5, "t2": 0.4}),
                                 Env(now_ms=1200.0))
    assert directives == [] and machine.termination_reason is TerminationReason.MAX_DURATION
    assert build_result(machine).termination.duration_ms == 1200.0


def test_tot_term_060_converged_when_the_best_answer_stops_improving_past_min_depth():
    # Defaults: window 2, min improvement 0.02, min_depth 2. Flat scores at depth 1 do not count (the seed
    # stopped there, after its second evaluation, before any thought was deep enough to be an answer).
    machine, seen = drive(new_machine(branching_factor=2, max_depth=4), numbered, scores_from({}, default=0.6))
    assert machine.termination_reason is TerminationReason.CONVERGED
    assert machine.recent_best_scores == (0.6, 0.6)
    assert expansions(seen) == [(), ("1",), ("2",)]  # equal scores keep frontier order


def test_tot_term_060_an_improving_search_does_not_converge():
    table = {"1.1": 0.5, "1.1.1": 0.6, "1.1.1.1": 0.7}
    machine, _ = drive(new_machine(branching_factor=1, max_depth=4, convergence_window=2), numbered,
                       scores_from(table, default=0.4))
    assert machine.termination_reason is TerminationReason.MAX_DEPTH


def test_tot_term_070_error_when_a_call_fails_or_nothing_could_be_scored():
    machine = new_machine()
    machine, directives = update(machine, Start("p", "run"))
    failed, _ = update(machine, LLMResult(directives[0].call_id, error="TimeoutError: slow"))
    assert failed.termination_reason is TerminationReason.ERROR and "slow" in failed.error
    machine, directives = update(machine, LLMResult(directives[0].call_id, text="no list here"))
    machine, directives = update(machine, LLMResult(directives[0].call_id, text="still nothing"))
    assert machine.status is Status.ERROR and "before any thought was scored" in machine.error


def test_tot_term_080_max_model_calls_stops_before_an_expansion_that_would_not_fit():
    machine, seen = drive(new_machine(branching_factor=2, max_depth=3, **{**OPEN, "max_model_calls": 5}), numbered,
                          scores_from({}))
    assert machine.termination_reason is TerminationReason.MAX_MODEL_CALLS
    assert len(seen) == 4 and model_calls(machine) == 4  # two expansions; a third would need calls 5 and 6
    assert build_result(machine).best is not None  # the best answer so far is still reported


def test_tot_term_080_a_repair_is_only_asked_for_when_the_budget_holds_it():
    machine = new_machine(**{**OPEN, "max_model_calls": 2})
    machine, directives = update(machine, Start("p", "run"))
    machine, directives = update(machine, LLMResult(directives[0].call_id, text="no list here"))
    # a repair (call 2) would leave no call for the evaluation: the branch closes instead, and with nothing
    # scored the search ends in error rather than overspending
    assert model_calls(machine) == 1 and machine.status is Status.ERROR
    roomy = new_machine(**{**OPEN, "max_model_calls": 3})
    roomy, directives = update(roomy, Start("p", "run"))
    roomy, directives = update(roomy, LLMResult(directives[0].call_id, text="no list here"))
    assert model_calls(roomy) == 2 and roomy.status is Status.GENERATING  # the repair fits: 2 calls + evaluation
