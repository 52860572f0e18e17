"""Nothing read from the durable-runs database is executed (DUR-SEC-010, DUR-SEC-020).

Each test writes a crafted pickle, one that creates a file when unpickled, into the rows a run keeps (its output,
inputs, a step's reply, the approval event, a decision message), as someone with access to the database could, then
reads the run every way llamabot does: ``runs list``/``show`` (CLI and Python), ``result``, ``approve``, and the
recovery of the run by a restarted process. The file is never created; the reads that need the row raise
``RecordRefusedError``.
"""

from __future__ import annotations

import base64
import os
import pickle
import signal
import subprocess

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.durable import (
    Durable,
    RecordRefusedError,
    approve,
    list_runs,
    show_run,
    shutdown,
    wait_result,
)
from tests.durable.conftest import PYTHON, subprocess_env, wait_until_waiting

APPROVAL_FACTORY = "tests.durable.agents:make_approval_agent"


class _Payload:
    """Unpickling this runs ``os.system("touch <path>")``."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):  # noqa: ANN204
        return os.system, (f"touch {self.path}",)


def _pickle_text(marker) -> str:  # noqa: ANN001
    return base64.b64encode(pickle.dumps(_Payload(str(marker)))).decode()


def _tamper(db_url: str, statements: list[tuple[str, dict]]) -> None:
    """Run ``statements`` on the run tables (``{t}`` is the table prefix: DBOS's schema on PostgreSQL)."""
    if db_url.startswith("sqlite"):
        engine, prefix = sa.create_engine(db_url), ""
    else:
        engine, prefix = sa.create_engine(sa.make_url(db_url).set(drivername="postgresql+psycopg")), "dbos."
    try:
        with engine.begin() as conn:
            for sql, params in statements:
                conn.execute(sa.text(sql.format(t=prefix)), params)
    finally:
        engine.dispose()


def test_dur_sec_010_a_pickled_output_is_refused_by_list_show_and_result(db_url, files, tmp_path):
    """DUR-SEC-010: a run's output replaced by a pickle (marked py_pickle, or unmarked) is never unpickled."""
    marker, marker2 = tmp_path / "pwned", tmp_path / "pwned-2"
    Durable("tests.durable.agents:make_agent", db=db_url).run("fine", run_id="done-1")
    Durable("tests.durable.agents:make_agent", db=db_url).run("fine too", run_id="done-2")
    shutdown()
    _tamper(db_url, [
        ("UPDATE {t}workflow_output SET output = :p WHERE workflow_uuid = 'done-1'", {"p": _pickle_text(marker)}),
        ("UPDATE {t}workflow_status SET serialization = 'py_pickle' WHERE workflow_uuid = 'done-1'", {}),
        ("UPDATE {t}workflow_output SET output = :p WHERE workflow_uuid = 'done-2'", {"p": _pickle_text(marker2)}),
        ("UPDATE {t}workflow_status SET serialization = NULL WHERE workflow_uuid = 'done-2'", {}),
    ])

    runs = {run.run_id: run for run in list_runs(db_url)}
    assert "RecordRefusedError" in runs["done-1"].error and "py_pickle" in runs["done-1"].error
    assert "RecordRefusedError" in runs["done-2"].error and "not llamabot's JSON" in runs["done-2"].error
    assert "RecordRefusedError" in show_run("done-1", db_url).error
    for run_id in ("done-1", "done-2"):
        with pytest.raises(RecordRefusedError, match="refused to load a record"):
            wait_result(run_id, db_url)
    runner = CliRunner()
    listed = runner.invoke(app, ["runs", "list", "--db", db_url])
    assert listed.exit_code == 0, listed.output
    shown = runner.invoke(app, ["runs", "show", "done-1", "--db", db_url])
    assert "error: RecordRefusedError: refused to load a record" in shown.output
    assert not marker.exists() and not marker2.exists()


def test_dur_sec_020_pickled_events_messages_and_steps_are_refused_on_approval_and_recovery(db_url, files, tmp_path):
    """DUR-SEC-020: a waiting run whose approval event, a decision message, its inputs and a recorded step's reply
    are pickles: listing, approving and recovering it never unpickle them; the recovered run fails with
    RecordRefusedError."""
    marker = tmp_path / "pwned"
    cmd = [PYTHON, "-m", "tests.durable.run_agent", db_url, "pay-1", "pay alice", APPROVAL_FACTORY]
    err = tmp_path / "run.err"
    with err.open("w") as log:
        process = subprocess.Popen(cmd, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_until_waiting(db_url, "pay-1", process, err)
    finally:
        process.send_signal(signal.SIGKILL)  # the run stays PENDING in the database, as after a crash
        process.wait()
    payload = _pickle_text(marker)
    _tamper(db_url, [
        ("UPDATE {t}workflow_events SET value = :p, serialization = 'py_pickle' WHERE workflow_uuid = 'pay-1'",
         {"p": payload}),
        ("INSERT INTO {t}notifications (message_uuid, destination_uuid, topic, message, serialization) "
         "VALUES ('evil-1', 'pay-1', 'llamabot.approval', :p, 'py_pickle')", {"p": payload}),
    ])
    [run] = list_runs(db_url)
    assert run.run_id == "pay-1" and run.waiting is None and "RecordRefusedError" in run.error
    with pytest.raises(RecordRefusedError, match="py_pickle"):
        approve("pay-1", db=db_url)

    _tamper(db_url, [
        ("UPDATE {t}operation_outputs SET output = :p, serialization = 'py_pickle' WHERE workflow_uuid = 'pay-1' "
         "AND function_id = 1", {"p": payload}),
        ("UPDATE {t}workflow_input SET inputs = :p WHERE workflow_uuid = 'pay-1'", {"p": payload}),
    ])
    assert list_runs(db_url)[0].query is None  # the inputs were refused too
    Durable(APPROVAL_FACTORY, db=db_url)  # recovers the run of this executor: it replays the recorded steps
    with pytest.raises(RecordRefusedError):
        wait_result("pay-1", db_url)
    assert show_run("pay-1", db_url).status == "ERROR"
    assert not marker.exists()
