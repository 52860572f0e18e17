"""Durable runs of the public API's features: a typed result is stored and returned typed, deps given to a durable
run are JSON data stored with it (a live handle is refused with NotStorableError), and an agent used as a tool is
run as steps of the outer run."""

from __future__ import annotations

import pytest

from llamabot.durable import Durable
from llamabot.durable.errors import NotStorableError
from tests.durable.api_bots import Point


def test_api_dur_010_a_typed_result_is_stored_and_returned_typed(tmp_path):
    agent = Durable("tests.durable.api_bots:make_typed", db=f"sqlite:///{tmp_path / 'runs.sqlite'}")
    assert agent.run("whose?", run_id="typed-1", deps="alice") == Point(x=1, y=5)
    assert agent.result("typed-1") == Point(x=1, y=5)


def test_api_dur_020_deps_must_be_json_data(tmp_path):
    agent = Durable("tests.durable.api_bots:make_typed", db=f"sqlite:///{tmp_path / 'runs.sqlite'}")
    with pytest.raises(NotStorableError, match="deps"):
        agent.run("whose?", deps=object())


def test_api_dur_030_an_agent_used_as_a_tool_runs_its_calls_as_steps_of_the_outer_run(tmp_path):
    agent = Durable("tests.durable.api_bots:make_outer", db=f"sqlite:///{tmp_path / 'runs.sqlite'}")
    assert agent.run("q", run_id="outer-1") == "outer: inner says hi"
    names = [name for _, name in agent.show("outer-1").steps]
    assert names == ["model:scripted", "model:inner", "tool:respond_to_user", "model:scripted", "tool:respond_to_user"]


def test_api_dur_040_an_inner_agents_approval_waits_durably_across_a_restart_and_runs_once(tmp_path, files):
    """The inner agent calls ``transfer`` (approval needed): the outer durable run waits for the decision like for
    its own calls, survives a restart while it waits (the inner steps before it are replayed, not redone), and
    after the approval the transfer runs exactly once and both agents answer."""
    import time

    from llamabot.durable import approve, show_run, shutdown

    effects, model_log = files
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"

    def waiting() -> dict:
        deadline = time.monotonic() + 30
        while not show_run("nest-1", db).waiting and time.monotonic() < deadline:
            time.sleep(0.05)
        return show_run("nest-1", db).waiting

    Durable("tests.durable.api_bots:make_outer_payer", db=db).start("pay erin for me", run_id="nest-1")
    pending = waiting()
    assert (pending["tool"], pending["arguments"], pending["request"]) == ("transfer", {"amount": 10.0, "to": "alice"}, 1)
    shutdown()  # the process stops while the run waits; a restart recovers it
    assert model_log.read_text().count("pay erin|start 0") == 1
    agent = Durable("tests.durable.api_bots:make_outer_payer", db=db)
    assert waiting()["request"] == 1
    assert model_log.read_text().count("pay erin|start 0") == 1  # the inner model call was replayed, not redone
    assert not effects.exists()
    approve("nest-1", db=db, request=1)
    assert agent.result("nest-1") == "outer: pay erin -> sent 10.0 to alice; recorded 2"
    assert effects.read_text().splitlines() == ["transfer|10.0|alice", "pay erin|2"]
    names = [name for _, name in agent.show("nest-1").steps]
    assert names[:2] == ["model:scripted", "model:inner"] and "tool:transfer" in names and "tool:payer" not in names


def test_api_dur_045_cancelling_a_run_whose_inner_agent_waits_cancels_it_and_runs_nothing(tmp_path, files):
    import time

    from llamabot.durable import RunFailedError, cancel, show_run

    effects, _ = files
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    agent = Durable("tests.durable.api_bots:make_outer_payer", db=db)
    agent.start("pay erin for me", run_id="nest-2")
    deadline = time.monotonic() + 30
    while not show_run("nest-2", db).waiting and time.monotonic() < deadline:
        time.sleep(0.05)
    cancel("nest-2", db)
    with pytest.raises(RunFailedError, match="cancelled"):
        agent.result("nest-2")
    time.sleep(0.5)
    assert show_run("nest-2", db).status == "CANCELLED"
    assert not effects.exists()
    names = [name for _, name in agent.show("nest-2").steps]
    assert names.count("model:scripted") == 1  # the outer model was never told of a failed tool


def test_api_dur_048_an_agent_tool_with_a_timeout_is_refused_when_the_durable_agent_is_made(tmp_path):
    from llamabot.durable import BotFactoryError

    with pytest.raises(BotFactoryError, match="tool 'helper' has a timeout"):
        Durable("tests.durable.api_bots:make_outer_with_timeout", db=f"sqlite:///{tmp_path / 'runs.sqlite'}")


def test_api_dur_040_on_the_sync_driver_too(tmp_path, files):
    """The inline path of ``step``: the inner agent's model call, its ``transfer`` (after the approval) and the
    rest are steps of the sync workflow, not one ``tool:payer`` step."""
    from dbos import DBOS

    from llamabot.durable.approval import APPROVAL_TOPIC, Decision
    from tests.durable.test_sync_steps import pending_approval, start_sync

    effects, _ = files
    agent = Durable("tests.durable.api_bots:make_outer_payer", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    handle = start_sync(agent, "pay via sync", "s-3")
    pending = pending_approval("s-3")
    assert pending["waiting"] and pending["tool"] == "transfer"
    DBOS.send("s-3", Decision(pending["request"], "approve").to_message(), APPROVAL_TOPIC)
    assert handle.get_result() == "outer: pay erin -> sent 10.0 to alice; recorded 2"
    steps = [step["function_name"] for step in DBOS.list_workflow_steps("s-3")]
    assert "tool:payer" not in steps and steps[:2] == ["model:scripted", "model:inner"] and "tool:transfer" in steps
    assert effects.read_text().splitlines() == ["transfer|10.0|alice", "pay erin|2"]
