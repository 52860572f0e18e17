"""The sync driver's steps (``DurableSteps.step``): an exchange driven by ``run_exchange`` inside a sync DBOS
workflow records the same steps and honours approvals the same way as the async path. The workflow is this
test's own (``runs`` only knows ``llamabot.run``), so the test reads steps and events through DBOS directly."""

from __future__ import annotations

import time

from dbos import DBOS, SetWorkflowID

from llamabot.durable import Durable
from llamabot.durable.approval import APPROVAL_EVENT, APPROVAL_TOPIC, Decision
from llamabot.durable.factory import build_bot
from llamabot.durable.steps import DurableSteps
from llamabot.models.exchange import using_steps


@DBOS.workflow(name="tests.durable.sync_run")
def sync_run(factory: str, query: str) -> str:
    with using_steps(DurableSteps()):
        return build_bot(factory).run_sync(query)[0]


def start_sync(agent: Durable, query: str, run_id: str):
    with SetWorkflowID(run_id):
        return DBOS.start_workflow(sync_run, agent.factory, query)


def pending_approval(run_id: str) -> dict:
    """The approval run ``run_id`` waits for (read through DBOS; within 30 s)."""
    deadline = time.monotonic() + 30
    while not (pending := DBOS.get_event(run_id, APPROVAL_EVENT, 0)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pending


def test_dur_step_010_sync_driver_records_the_same_steps(tmp_path, files):
    effects, _ = files
    agent = Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    assert start_sync(agent, "sync", "s-1").get_result() == "sync -> recorded 1; recorded 2; recorded 3"
    steps = [step["function_name"] for step in DBOS.list_workflow_steps("s-1")]
    assert steps == ["model:conversation", "tool:record"] * 3 + ["model:conversation", "tool:respond_to_user"]
    assert effects.read_text().splitlines() == ["sync|1", "sync|2", "sync|3"]


def test_dur_hil_020_sync_driver_waits_for_and_applies_a_rejection(tmp_path, files):
    effects, _ = files
    agent = Durable("tests.durable.agents:make_approval_agent", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    handle = start_sync(agent, "pay sync", "s-2")
    pending = pending_approval("s-2")
    assert pending["waiting"] and pending["tool"] == "transfer"
    DBOS.send("s-2", Decision(pending["request"], "reject", reason="no").to_message(), APPROVAL_TOPIC)
    assert handle.get_result().startswith("pay sync -> Error: ToolRejectedError: a person rejected the call of "
                                          "tool 'transfer': no")
    assert effects.read_text().splitlines() == ["pay sync|2"]

