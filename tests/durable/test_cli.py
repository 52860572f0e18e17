"""``llamabot runs ...`` on a database with a finished run and a waiting run (DUR-CLI-010..030)."""

from __future__ import annotations

import time

from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.durable import Durable, show_run

runner = CliRunner()


def test_dur_cli_010_list_show_approve_reject(tmp_path, files):
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    waiting = _finished_and_waiting(db)

    listed = runner.invoke(app, ["runs", "list", "--db", db])
    assert listed.exit_code == 0, listed.output
    assert "done-1" in listed.output and "SUCCESS" in listed.output and "WAITING (transfer)" in listed.output

    shown = runner.invoke(app, ["runs", "show", "wait-1", "--db", db])
    assert 'WAITING for approval #1: transfer({"amount": 10.0, "to": "alice"})' in shown.output
    done = runner.invoke(app, ["runs", "show", "done-1", "--db", db])
    assert "result: finished one -> recorded 1; recorded 2; recorded 3" in done.output and "step 2: tool:record" in done.output

    bad = runner.invoke(app, ["runs", "approve", "wait-1", "--arguments", "{not json", "--db", db])
    assert bad.exit_code == 2 and "not JSON" in bad.output
    refused = runner.invoke(app, ["runs", "approve", "done-1", "--db", db])
    assert refused.exit_code == 1 and "not waiting" in refused.output
    unknown = runner.invoke(app, ["runs", "reject", "nope", "--reason", "x", "--db", db])
    assert unknown.exit_code == 1 and "no durable run has the id 'nope'" in unknown.output

    approved = runner.invoke(app, ["runs", "approve", "wait-1", "--arguments", '{"amount": 1, "to": "erin"}',
                                   "--db", db])
    assert approved.exit_code == 0 and "approved transfer for run wait-1" in approved.output
    assert waiting.result("wait-1").startswith("pay erin -> sent 1.0 to erin")


def _finished_and_waiting(db: str) -> Durable:
    """A database with run ``done-1`` finished and run ``wait-1`` waiting for an approval (in this process)."""
    Durable("tests.durable.agents:make_agent", db=db).run("finished one", run_id="done-1")
    waiting = Durable("tests.durable.agents:make_approval_agent", db=db)
    waiting.start("pay erin", run_id="wait-1")
    deadline = time.monotonic() + 30
    while not show_run("wait-1", db).waiting and time.monotonic() < deadline:
        time.sleep(0.05)
    return waiting


def test_dur_cli_030_cancel_a_waiting_run_and_typed_errors(tmp_path, files):
    """DUR-CLI-030: ``runs cancel ID`` cancels a run that waits (its result is then a RunFailedError); a run
    cancelled already, a finished one and an unknown id exit 1 with a typed error saying so; ``runs resume``
    lets a cancelled run go on."""
    import pytest

    from llamabot.durable import RunFailedError, RunFinishedError, cancel

    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    waiting = _finished_and_waiting(db)
    cancelled = runner.invoke(app, ["runs", "cancel", "wait-1", "--db", db])
    assert cancelled.exit_code == 0 and "cancelled run wait-1 (CANCELLED)" in cancelled.output, cancelled.output
    with pytest.raises(RunFailedError, match="wait-1"):
        waiting.result("wait-1")
    again = runner.invoke(app, ["runs", "cancel", "wait-1", "--db", db])
    assert again.exit_code == 1 and "run wait-1 is CANCELLED already" in again.output
    done = runner.invoke(app, ["runs", "cancel", "done-1", "--db", db])
    assert done.exit_code == 1 and "run done-1 is SUCCESS already; there is nothing to cancel" in done.output
    unknown = runner.invoke(app, ["runs", "cancel", "nope", "--db", db])
    assert unknown.exit_code == 1 and "no durable run has the id 'nope'" in unknown.output
    with pytest.raises(RunFinishedError):
        cancel("done-1", db)
    resumed = runner.invoke(app, ["runs", "resume", "wait-1", "--db", db])  # a cancelled run can go on
    assert resumed.exit_code == 0 and "resumed run wait-1" in resumed.output, resumed.output
    deadline = time.monotonic() + 30
    while not show_run("wait-1", db).waiting and time.monotonic() < deadline:
        time.sleep(0.05)
    assert show_run("wait-1", db).waiting["tool"] == "transfer"  # waiting for its approval again


def test_dur_cli_040_resume_a_run_of_a_dead_executor_now(tmp_path, files, monkeypatch):
    """DUR-CLI-040: a process with executor id ``gone`` is killed mid-run. ``runs show`` says whether its executor
    heart-beats; ``runs resume`` refuses while its heartbeat is fresh (exit 1, naming the executor), takes the run
    once the executor is silent for the orphan timeout, and a process on the database finishes it; a finished run, a queued run and an unknown id exit 1."""
    import signal
    import subprocess

    from tests.durable.conftest import PYTHON, subprocess_env
    from tests.durable.test_recovery import _wait_for

    monkeypatch.setenv("LLAMABOT_DURABLE_HEARTBEAT_S", "1")
    monkeypatch.setenv("LLAMABOT_DURABLE_ORPHAN_S", "2")
    _, model_log = files
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    proc = subprocess.Popen([PYTHON, "-m", "tests.durable.run_agent", db, "run-r", "resume me"],
                            env=subprocess_env(DBOS__VMID="gone", DURABLE_LATENCY_S="0.3"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for(model_log, "resume me|start 1", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    alive = runner.invoke(app, ["runs", "resume", "run-r", "--db", db])
    assert alive.exit_code == 1 and "in flight on executor gone" in alive.output, alive.output
    assert "executor gone: heartbeat" in runner.invoke(app, ["runs", "show", "run-r", "--db", db]).output
    time.sleep(2.5)
    shown = runner.invoke(app, ["runs", "show", "run-r", "--db", db]).output
    assert "executor gone is gone (no heartbeat for 2 s or more)" in shown and "runs resume run-r" in shown
    resumed = runner.invoke(app, ["runs", "resume", "run-r", "--db", db])
    assert resumed.exit_code == 0 and "resumed run run-r (ENQUEUED)" in resumed.output, resumed.output
    from llamabot.durable.runs import enqueue

    enqueue("tests.durable.agents:make_agent", "later", {}, "queued-1", db)
    queued = runner.invoke(app, ["runs", "resume", "queued-1", "--db", db])
    assert queued.exit_code == 1 and "run queued-1 is ENQUEUED" in queued.output

    agent = Durable("tests.durable.agents:make_agent", db=db)  # executor "local": dequeues the resumed run
    assert agent.result("run-r") == "resume me -> recorded 1; recorded 2; recorded 3"
    finished = runner.invoke(app, ["runs", "resume", "run-r", "--db", db])
    assert finished.exit_code == 1 and "run run-r is SUCCESS; there is nothing to resume" in finished.output
    unknown = runner.invoke(app, ["runs", "resume", "nope", "--db", db])
    assert unknown.exit_code == 1 and "no durable run has the id 'nope'" in unknown.output


def test_dur_cli_050_list_by_status_and_age(tmp_path, files):
    """DUR-CLI-050: ``runs list --status`` (repeatable, WAITING for runs waiting for an approval) and
    ``--older-than 90s|10m|2h|1d``; an unknown status or a malformed age exits 2."""
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    _finished_and_waiting(db)
    ok = runner.invoke(app, ["runs", "list", "--status", "SUCCESS", "--db", db])
    assert "done-1" in ok.output and "wait-1" not in ok.output
    waiting = runner.invoke(app, ["runs", "list", "--status", "WAITING", "--db", db])
    assert "wait-1" in waiting.output and "done-1" not in waiting.output
    both = runner.invoke(app, ["runs", "list", "--status", "success", "--status", "PENDING", "--db", db])
    assert "wait-1" in both.output and "done-1" in both.output
    old = runner.invoke(app, ["runs", "list", "--older-than", "1h", "--db", db])
    assert old.exit_code == 0 and "done-1" not in old.output and "wait-1" not in old.output
    young = runner.invoke(app, ["runs", "list", "--older-than", "0s", "--status", "PENDING", "--db", db])
    assert "wait-1" in young.output
    bad_age = runner.invoke(app, ["runs", "list", "--older-than", "10x", "--db", db])
    assert bad_age.exit_code == 2 and "not an age" in bad_age.output
    bad_status = runner.invoke(app, ["runs", "list", "--status", "DONE", "--db", db])
    assert bad_status.exit_code == 2 and "unknown run status 'DONE'" in bad_status.output
