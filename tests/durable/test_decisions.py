"""The first decision on an approval wins, atomically (DUR-HIL-040, DUR-HIL-070, DUR-HIL-080).

Deciders race for real: threads released together by a barrier, and separate ``llamabot runs`` processes, each
with its own connections, on SQLite and on PostgreSQL. Exactly one is told OK; every other gets
``AlreadyDecidedError`` naming the winner; the run does what the winner decided.
"""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.durable import AlreadyDecidedError, Durable, NotWaitingError, approve, reject, show_run
from tests.durable.conftest import PYTHON, subprocess_env
from tests.durable.test_approval import FACTORY, _waiting

DECIDERS = 8


def _decide(i: int, run_id: str, db: str) -> None:
    if i % 2:
        approve(run_id, db=db, by=f"d{i}")
    else:
        reject(run_id, "no", db=db, by=f"d{i}")


def test_dur_hil_070_racing_threads_one_decision_wins(db_url, files):
    """DUR-HIL-070: eight deciders (approve and reject) at the same instant: one OK, seven refused naming it."""
    effects, _ = files
    agent = Durable(FACTORY, db=db_url)
    agent.start("pay alice", run_id="race-1")
    _waiting(db_url, "race-1")
    barrier, outcomes = threading.Barrier(DECIDERS), [None] * DECIDERS

    def decider(i: int) -> None:
        barrier.wait()
        try:
            _decide(i, "race-1", db_url)
            outcomes[i] = "ok"
        except AlreadyDecidedError as exc:
            outcomes[i] = exc
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcomes[i] = repr(exc)

    threads = [threading.Thread(target=decider, args=(i,)) for i in range(DECIDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    winners = [i for i, outcome in enumerate(outcomes) if outcome == "ok"]
    assert len(winners) == 1, outcomes
    verdict = "approve" if winners[0] % 2 else "reject"
    refused = [o for o in outcomes if o != "ok"]
    assert all(isinstance(o, AlreadyDecidedError) for o in refused), outcomes
    assert {(o.verdict, o.by, o.request) for o in refused} == {(verdict, f"d{winners[0]}", 1)}
    result = agent.result("race-1")
    if verdict == "approve":
        assert result.startswith("pay alice -> sent 10.0 to alice")
        assert effects.read_text().splitlines()[0] == "transfer|10.0|alice"
    else:
        assert "ToolRejectedError" in result and not effects.read_text().startswith("transfer")


def test_dur_hil_070_racing_processes_one_decision_wins(db_url, files):
    """DUR-HIL-070: `llamabot runs approve` and `reject` in separate processes: one exits 0, the other 1 saying
    which decision stands."""
    agent = Durable(FACTORY, db=db_url)
    agent.start("pay bob", run_id="race-2")
    _waiting(db_url, "race-2")
    commands = [["approve", "race-2", "--by", "ann"], ["reject", "race-2", "--reason", "no", "--by", "rob"]] * 2
    cli = [PYTHON, "-c", "from llamabot.cli import main; main()", "runs"]
    processes = [subprocess.Popen([*cli, *cmd, "--db", db_url], env=subprocess_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for cmd in commands]
    done = [(p.wait(120), *p.communicate()) for p in processes]
    assert sorted(code for code, _, _ in done) == [0, 1, 1, 1], done
    winner = next(out for code, out, _ in done if code == 0)
    first = "approved by ann" if winner.startswith("approved") else "rejected by rob"
    for code, _, err in done:
        if code:
            assert "already decided" in err and first in " ".join(err.split()), err
    agent.result("race-2")


def test_dur_hil_080_a_later_decision_is_refused_naming_the_first(tmp_path, files):
    """DUR-HIL-080: approve, then reject: the reject is refused naming the approval (who, when); after the run
    finished, a decision is still refused the same way (the run whose process is dead: test_dur_hil_010)."""
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    agent = Durable(FACTORY, db=db)
    run_id = agent.start("pay carol", run_id="late-1")
    _waiting(db, run_id)
    approve(run_id, db=db, by="ann")
    try:
        reject(run_id, "changed my mind", db=db, by="rob")
    except AlreadyDecidedError as exc:
        refused = exc
    else:
        raise AssertionError("the second decision was accepted")
    assert isinstance(refused, NotWaitingError)  # callers catching NotWaitingError keep working
    assert (refused.verdict, refused.by, refused.request) == ("approve", "ann", 1)
    assert "approval #1 of run late-1 was already decided: approved by ann at 20" in str(refused)
    assert agent.result(run_id).startswith("pay carol -> sent 10.0 to alice")  # the approved call ran
    cli = CliRunner().invoke(app, ["runs", "reject", run_id, "--db", db])
    assert cli.exit_code == 1 and "already decided: approved by ann" in " ".join(cli.output.split())


def test_dur_hil_090_a_decision_naming_its_approval_never_answers_a_later_one(tmp_path, files):
    """DUR-HIL-090: Bob looked at approval #1; Ann approved it first and the run now waits for #2. Bob's
    decision names #1 (``request=1``, ``--request 1``): it is refused naming Ann's decision, and #2 stays
    undecided (without the number, a decision answers whatever the run waits for now)."""
    effects, _ = files
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    agent = Durable("tests.durable.agents:make_two_approvals_agent", db=db)
    run_id = agent.start("pay twice", run_id="two-1")
    seen = _waiting(db, run_id)
    assert seen["request"] == 1
    approve(run_id, db=db, by="ann", request=1)
    deadline = time.monotonic() + 60
    while (show_run(run_id, db).waiting or {}).get("request") != 2:
        assert time.monotonic() < deadline, "the run never waited for its second approval"
        time.sleep(0.05)
    with pytest.raises(AlreadyDecidedError, match="approval #1 of run two-1 was already decided: approved by ann"):
        approve(run_id, db=db, by="bob", request=1)
    with pytest.raises(AlreadyDecidedError, match="approved by ann"):
        reject(run_id, "no", db=db, by="bob", request=1)
    with pytest.raises(NotWaitingError, match=r"waits for approval #2 \(transfer\), not approval #3"):
        approve(run_id, db=db, request=3)
    with pytest.raises(ValueError, match="approval number"):
        approve(run_id, db=db, request=True)
    result = CliRunner().invoke(app, ["runs", "approve", run_id, "--db", db, "--request", "1"])
    assert result.exit_code == 1 and "already decided" in result.output
    assert show_run(run_id, db).waiting["request"] == 2  # nothing was sent for #2
    agent.reject(run_id, "too much", request=2)
    assert "ToolRejectedError" in agent.result(run_id)
    assert effects.read_text().splitlines() == ["transfer|10.0|alice"]
