"""Human in the loop: a tool with requires_approval pauses the run durably until a person decides."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from llamabot.durable import (
    AlreadyDecidedError,
    Durable,
    NotStorableError,
    NotWaitingError,
    approve,
    list_runs,
    reject,
)
from tests.durable.conftest import PYTHON, subprocess_env, wait_until_waiting

FACTORY = "tests.durable.agents:make_approval_agent"


def _waiting(db: str, run_id: str) -> dict:
    return wait_until_waiting(db, run_id)


def test_dur_hil_010_a_run_waits_then_approval_after_a_restart_runs_the_tool_once(db_url, files, tmp_path):
    """DUR-HIL-010/040/080: paused, process killed, approved while no process runs (a reject after it is
    refused), resumed by a new process."""
    effects, _ = files
    cmd = [PYTHON, "-m", "tests.durable.run_agent", db_url, "pay-1", "pay alice", FACTORY]
    err = tmp_path / "first.err"
    with err.open("w") as log:  # a file: a pipe nobody reads while the run waits could fill and block it
        first = subprocess.Popen(cmd, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=log)
    waiting = wait_until_waiting(db_url, "pay-1", first, err)
    assert waiting["tool"] == "transfer" and waiting["arguments"] == {"amount": 10.0, "to": "alice"}
    assert [r.run_id for r in list_runs(db_url) if r.waiting] == ["pay-1"]
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert not effects.exists()  # nothing ran before the approval

    approve("pay-1", db=db_url, by="ann")
    with pytest.raises(AlreadyDecidedError, match="already decided: approved by ann"):  # DUR-HIL-040, -080
        reject("pay-1", "changed my mind", db=db_url)  # while no process runs the run: the approval stands
    second = subprocess.Popen(cmd, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["result"] == "pay alice -> sent 10.0 to alice; recorded 2"
    assert effects.read_text().splitlines() == ["transfer|10.0|alice", "pay alice|2"]
    with pytest.raises(NotWaitingError, match="already decided"):  # the run took its decision and finished
        approve("pay-1", db=db_url)


def test_dur_hil_020_rejection_is_shown_to_the_model_and_the_tool_never_runs(tmp_path, files):
    """DUR-HIL-020"""
    effects, _ = files
    agent = Durable(FACTORY, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    run_id = agent.start("pay bob", run_id="pay-2")
    _waiting(agent.db, run_id)
    agent.reject(run_id, reason="not this month")
    result = agent.result(run_id)
    assert result.startswith("pay bob -> Error: ToolRejectedError: a person rejected the call of tool 'transfer': "
                              "not this month")
    assert effects.read_text().splitlines() == ["pay bob|2"]


def test_dur_hil_030_approval_with_edited_arguments_runs_the_edited_call(tmp_path, files):
    """DUR-HIL-030"""
    effects, _ = files
    agent = Durable(FACTORY, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    run_id = agent.start("pay carol")
    _waiting(agent.db, run_id)
    agent.approve(run_id, arguments={"amount": 5, "to": "carol"})
    assert agent.result(run_id).startswith("pay carol -> sent 5.0 to carol")
    assert effects.read_text().splitlines()[0] == "transfer|5.0|carol"


def test_dur_hil_050_invalid_edited_arguments_are_shown_to_the_model(tmp_path, files):
    """DUR-HIL-050: edited arguments are validated against the tool's schema; the model sees what was wrong."""
    effects, _ = files
    agent = Durable(FACTORY, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    run_id = agent.start("pay dan")
    _waiting(agent.db, run_id)
    with pytest.raises(NotStorableError):
        agent.approve(run_id, arguments=["not", "a", "dict"])  # refused before it reaches the run
    agent.approve(run_id, arguments={"amount": "lots"})
    assert "ToolArgumentsError" in agent.result(run_id)
    assert not any(line.startswith("transfer") for line in effects.read_text().splitlines())


def test_dur_hil_060_reject_on_a_finished_run_is_refused(tmp_path, files):
    """DUR-ERR-040"""
    agent = Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    agent.run("quick", run_id="done-1")
    with pytest.raises(NotWaitingError, match="done-1.*SUCCESS"):
        reject("done-1", "too late", db=agent.db)
