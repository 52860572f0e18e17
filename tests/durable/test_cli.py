"""``llamabot runs ...`` on a database with a finished run and a waiting run (DUR-CLI-010..030)."""

from __future__ import annotations

import time

from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.durable import Durable, show_run

runner = CliRunner()


def test_dur_cli_010_list_show_approve_reject(tmp_path, files):
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    Durable("tests.durable.agents:make_agent", db=db).run("finished one", run_id="done-1")
    waiting = Durable("tests.durable.agents:make_approval_agent", db=db)
    waiting.start("pay erin", run_id="wait-1")
    deadline = time.monotonic() + 30
    while not show_run("wait-1", db).waiting and time.monotonic() < deadline:
        time.sleep(0.05)

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
