"""A durable run answers as the same bot in memory does; its model and tool calls are recorded steps."""

from __future__ import annotations

import pytest

from llamabot.durable import Durable, list_runs, show_run
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN
from tests.durable.agents import make_agent


def make_aot() -> AoTBot:
    return AoTBot(expressions=False, model=ScriptedModel([json_reply(EXAMPLE_PLAN)]))


def make_aot_samples() -> AoTBot:
    return AoTBot(expressions=False, model=ScriptedModel([json_reply(EXAMPLE_PLAN)] * 2), samples=2)


def test_dur_run_010_same_answer_as_in_memory_with_every_call_a_step(db_url, files):
    """DUR-RUN-010, DUR-STEP-010 on SQLite and PostgreSQL."""
    expected = make_agent()("same?")
    agent = Durable(make_agent, db=db_url)
    assert agent.run("same?", run_id="r-1") == expected
    steps = [name for _, name in show_run("r-1", db_url).steps]
    assert steps == ["model:conversation", "tool:record"] * 3 + ["model:conversation", "tool:respond_to_user"]


def test_dur_run_020_a_run_id_names_one_run(tmp_path, files):
    """DUR-RUN-020: starting a run id again returns that run's result; nothing runs twice."""
    effects, model_log = files
    agent = Durable(make_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    first = agent.run("once", run_id="order-42")
    assert agent.run("once", run_id="order-42") == first
    assert effects.read_text().splitlines() == ["once|1", "once|2", "once|3"]
    assert [r.run_id for r in list_runs(agent.db)] == ["order-42"]


async def test_dur_run_025_a_run_id_given_again_with_other_inputs_is_refused(tmp_path, files):
    """DUR-RUN-020's other side: the same id with another query, other options or another bot names a run that
    answered something else; it is refused (its result is not handed back as this question's), by every way of
    starting a run, and nothing runs."""
    from llamabot.durable import RunIdConflictError

    effects, _ = files
    agent = Durable(make_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    agent.run("pay alice", run_id="order-42")
    for start in (agent.run, agent.start, agent.enqueue):
        with pytest.raises(RunIdConflictError, match="'order-42' names a run started with .*query \"pay alice\""):
            start("refund bob", run_id="order-42")
    with pytest.raises(RunIdConflictError, match="options"):
        await agent.arun("pay alice", run_id="order-42", memory=[])
    with pytest.raises(RunIdConflictError, match="make_approval_agent"):
        await Durable("tests.durable.agents:make_approval_agent", db=agent.db).aenqueue("pay alice", run_id="order-42")
    assert await agent.arun("pay alice", run_id="order-42") == "pay alice -> recorded 1; recorded 2; recorded 3"
    assert effects.read_text().splitlines() == ["pay alice|1", "pay alice|2", "pay alice|3"]


async def test_dur_run_030_async_runs_concurrently(tmp_path, files):
    """DUR-RUN-030"""
    import asyncio

    agent = Durable(make_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    answers = await asyncio.gather(*(agent.arun(f"q{i}") for i in range(5)))
    assert answers == [f"q{i} -> recorded 1; recorded 2; recorded 3" for i in range(5)]


def test_dur_run_040_enqueued_runs_are_executed_and_polled_by_id(tmp_path, files):
    """DUR-RUN-040: enqueue returns the id at once; result(id) waits for it."""
    agent = Durable(make_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    run_id = agent.enqueue("queued")
    assert agent.result(run_id) == "queued -> recorded 1; recorded 2; recorded 3"
    assert show_run(run_id, agent.db).status == "SUCCESS"


def test_dur_step_020_aot_plan_call_and_atoms_are_steps(tmp_path):
    """DUR-STEP-020: another pattern, same mechanism: AoT's plan call and each atom are recorded steps."""
    agent = Durable(make_aot, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    result = agent.run("What is (15 + 7) * 3 - 10?", run_id="aot-1")
    assert result.answer == 56
    steps = [name for _, name in show_run("aot-1", agent.db).steps]
    assert steps[0].startswith("model:") and steps[1:] == ["tool:add", "tool:multiply", "tool:subtract"]


def make_tot():
    from llamabot.evals.game24.prompts import Game24Prompts
    from llamabot.reasoning.tot.graph import ToTBot
    from tests.reasoning.tot.helpers import oracle_model

    return ToTBot(model=oracle_model(), prompts=Game24Prompts(), min_depth=3, max_depth=3)


def test_dur_step_020_tot_model_calls_are_steps(tmp_path):
    """DUR-STEP-020: ToT's driver makes one model-call step per directive; the result is the in-memory one."""
    expected = make_tot()("4 9 10 13")
    agent = Durable(make_tot, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    result = agent.run("4 9 10 13", run_id="tot-1")
    assert result.answer == expected.answer and result.solution_path == expected.solution_path
    steps = [name for _, name in show_run("tot-1", agent.db).steps]
    assert steps and all(name == "model:scripted" for name in steps)


def make_anot():
    from llamabot.reasoning.anot import ANoTBot
    from tests.reasoning.anot.helpers import MODEL_STRATEGY, three_phase_responder

    # conditions the model judges: phase 3's steps are model calls (CHECK steps call no model)
    return ANoTBot(model=ScriptedModel(responder=three_phase_responder(strategy=MODEL_STRATEGY)), debug=0)


def make_anot_by_final():
    from llamabot.reasoning.anot import ANoTBot
    from tests.reasoning.anot.helpers import MODEL_STRATEGY, three_phase_responder

    return ANoTBot(model=ScriptedModel(responder=three_phase_responder(strategy=MODEL_STRATEGY)), debug=0,
                   rank_by="final")


@pytest.mark.parametrize("factory", [make_anot, make_anot_by_final])
def test_dur_step_020_anot_phase_calls_and_phase3_steps_are_steps(tmp_path, factory):
    """DUR-STEP-020: ANoT's strategy call, its script-writing agent's model and tool calls and each phase-3 step
    are recorded steps; the durable result (which holds the vocabulary's strategy model, made at run time) is the
    in-memory one. The final step is a step only where its output decides the ranking (rank_by="final")."""
    from tests.reasoning.anot.helpers import ITEMS

    expected = factory()("kids and cozy", ITEMS)
    agent = Durable(factory, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    result = agent.run("kids and cozy", items=ITEMS, run_id="anot-1")
    assert result.ranking == expected.ranking and result.outputs == expected.outputs
    assert result.strategy == expected.strategy and result.lwt == expected.lwt
    steps = [name for _, name in show_run("anot-1", agent.db).steps]
    # phase 1, phase 2's decision and its done() call, then the script's steps (c1, c2, and final when it decides)
    script_steps = 3 if factory is make_anot_by_final else 2
    assert steps == ["model:scripted", "model:scripted", "tool:done"] + ["model:scripted"] * script_steps
    assert agent.run("kids and cozy", items=ITEMS, run_id="anot-1").ranking == expected.ranking  # replayed


def test_dur_step_020_aot_drafted_first_plans_are_steps_one_at_a_time(tmp_path):
    """DUR-STEP-020: with samples=2 the samples' first plans, drafted together in memory, are two model steps in
    a durable run (recorded in order, so one at a time), then each sample's atoms."""
    agent = Durable(make_aot_samples, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    result = agent.run("What is (15 + 7) * 3 - 10?", run_id="aot-2")
    assert result.answer == 56 and result.votes == 2
    steps = [name for _, name in show_run("aot-2", agent.db).steps]
    assert [s.split(":")[0] for s in steps[:2]] == ["model", "model"]
    assert steps[2:] == ["tool:add", "tool:multiply", "tool:subtract"] * 2
