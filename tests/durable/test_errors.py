"""Bad input gets a typed error naming what was wrong; none corrupts other runs."""

from __future__ import annotations

import time

import pytest

from llamabot import AgentBot, tool
from llamabot.durable import (
    BotFactoryError,
    DatabaseUnreachableError,
    DatabaseURLError,
    Durable,
    DurableRuntimeError,
    NotStorableError,
    NotWaitingError,
    UnknownRunError,
    approve,
    list_runs,
    resolve_db_url,
    show_run,
)
from llamabot.durable.config import DB_ENV
from llamabot.models.scripted import ScriptedModel, text
from tests.durable.agents import ConversationModel


def test_dur_db_010_default_is_a_sqlite_file_under_the_user_data_dir(monkeypatch, tmp_path):
    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert resolve_db_url() == f"sqlite:///{tmp_path / 'llamabot' / 'runs.sqlite'}"


def test_dur_db_020_argument_beats_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(DB_ENV, "postgresql://u@h:5432/env")
    assert resolve_db_url() == "postgresql://u@h:5432/env"
    assert resolve_db_url("sqlite:///x.db") == "sqlite:///x.db"
    assert resolve_db_url(tmp_path / "plain.db") == f"sqlite:///{tmp_path / 'plain.db'}"


@pytest.mark.parametrize("url, fragment", [
    ("mysql://u:secret@h/db", "mysql:// databases are not supported"),
    ("postgresql://u@h:5432", "names no database"),
    ("  ", "is empty"),
    ("sqlite:///", "names no file"),
])
def test_dur_err_010_malformed_database_urls_are_refused(url, fragment):
    with pytest.raises(DatabaseURLError, match=fragment) as raised:
        resolve_db_url(url)
    assert "secret" not in str(raised.value)  # passwords never reach error messages


def test_dur_err_020_unreachable_database_is_a_typed_error_quickly(tmp_path):
    from tests.durable.postgres import free_port

    started = time.monotonic()
    with pytest.raises(DatabaseUnreachableError, match=r"127\.0\.0\.1"):
        Durable("tests.durable.agents:make_agent", db=f"postgresql://u:pw@127.0.0.1:{free_port()}/db")
    assert time.monotonic() - started < 10
    with pytest.raises(DatabaseUnreachableError, match="no-such-dir"):
        Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path}/no-such-dir/x.sqlite")


def test_dur_err_030_unknown_run_ids(tmp_path):
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    agent = Durable("tests.durable.agents:make_agent", db=db)
    for call in (lambda: show_run("nope", db), lambda: approve("nope", db=db), lambda: agent.result("nope")):
        with pytest.raises(UnknownRunError, match="'nope'"):
            call()


def test_dur_err_040_approving_a_run_that_does_not_wait(tmp_path, files):
    agent = Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    agent.run("no approval here", run_id="plain")
    with pytest.raises(NotWaitingError, match="plain"):
        agent.approve("plain")


@tool(requires_approval=True)
def tag(labels: set[str]) -> str:
    """Tag something (a set: not JSON).

    Args:
        labels: The labels.
    """
    return ",".join(sorted(labels))


def make_set_agent() -> AgentBot:
    from llamabot.models.scripted import ScriptedModel, text, tool_call

    return AgentBot(tools=[tag], model=ScriptedModel([tool_call("tag", labels=["a"]), text("gave up")]))


def test_dur_err_050_tool_arguments_that_cannot_be_stored_are_shown_to_the_model(tmp_path, files):
    agent = Durable(make_set_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    run_id = agent.start("tag it")
    assert agent.result(run_id) == "gave up"
    trace_text = str(agent.show(run_id))
    assert "SUCCESS" in trace_text
    bot = agent.bot
    assert bot.model.requests[1].messages[-1]["content"].startswith(
        "Error: NotStorableError: the arguments of tool 'tag' cannot be stored as JSON")


class LockingAgent(AgentBot):
    """A graph whose result cannot be pickled (as a custom graph's might be)."""

    async def arun(self, query, **options):  # noqa: ANN001, ANN201
        import threading

        await super().arun(query, **options)
        return threading.Lock()


def make_locking_agent() -> AgentBot:
    return LockingAgent(tools=[], model_name=ScriptedModel([text("fine")]))


def test_dur_err_055_a_result_that_cannot_be_stored_is_a_typed_error_naming_it(tmp_path):
    """DUR-ERR-055: the run fails with NotStorableError naming the result's type and the bot, not with DBOS's bare
    PicklingError; the failure is recorded with the run."""
    agent = Durable(make_locking_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    with pytest.raises(NotStorableError, match=r"the run's result \(lock, from LockingAgent\) cannot be stored"):
        agent.run("q", run_id="locked")
    assert show_run("locked", agent.db).status == "ERROR"


def test_dur_err_060_query_and_options_must_be_json(tmp_path):
    agent = Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    with pytest.raises(NotStorableError, match="the query"):
        agent.start({1, 2})
    with pytest.raises(NotStorableError, match="'memory'"):
        agent.start("q", memory=[object()])


def test_dur_err_065_unknown_missing_or_inapplicable_run_options_are_refused_before_a_run_is_stored(tmp_path):
    """An option the bot's runs do not take is a TypeError at once (not a stored run that then fails), for
    start, run, enqueue and their async twins alike; so is approver= (a person decides on durable runs)."""
    import asyncio

    agent = Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    for start in (agent.start, agent.run, agent.enqueue):
        with pytest.raises(TypeError, match="unexpected keyword argument 'memroy'; did you mean memory"):
            start("q", run_id="typo", memroy=[])
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        asyncio.run(agent.aenqueue("q", run_id="typo", bogus=1))
    with pytest.raises(TypeError, match="approver= does not apply to durable runs"):
        agent.start("q", run_id="typo", approver=lambda request: True)
    assert list_runs(agent.db) == []


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (-2, ValueError), ("2", TypeError), (1.5, TypeError),
                                             (True, TypeError)])
def test_dur_err_067_a_worker_concurrency_that_would_never_execute_a_run_is_refused(tmp_path, value, error):
    """worker_concurrency=0 used to be accepted: the process enqueued runs and never executed one."""
    from typer.testing import CliRunner

    from llamabot.cli import app

    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    with pytest.raises(error, match="worker_concurrency must be"):
        Durable("tests.durable.agents:make_agent", db=db, worker_concurrency=value)
    refused = CliRunner().invoke(app, ["worker", "--db", db, "--concurrency", "0"])
    assert refused.exit_code == 2 and "--concurrency" in refused.output


def test_dur_err_070_factories_another_process_cannot_rebuild():
    with pytest.raises(BotFactoryError, match="module-level"):
        Durable(lambda: AgentBot(model=ConversationModel()))
    with pytest.raises(BotFactoryError, match="module:attr"):
        Durable("no_colon_here")
    with pytest.raises(BotFactoryError, match="cannot load"):
        Durable("tests.durable.agents:nothing_here")
    with pytest.raises(BotFactoryError, match="without arguments"):
        Durable("tests.durable.agents:record")
    with pytest.raises(BotFactoryError, match="gave ConversationModel, not a graph bot"):
        Durable("tests.durable.agents:ConversationModel")


def test_dur_err_080_one_database_per_process(tmp_path):
    Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'a.sqlite'}")
    with pytest.raises(DurableRuntimeError, match="already keeps durable runs"):
        Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 'b.sqlite'}")


def test_dur_set_010_deployment_settings_are_whole_seconds_checked_when_the_runtime_starts(tmp_path, monkeypatch):
    """DUR-SET-010: ``LLAMABOT_DURABLE_GRACE_S``, ``_HEARTBEAT_S`` and ``_ORPHAN_S`` are whole seconds within
    bounds; an orphan timeout under twice the heartbeat is refused; a bad value fails ``Durable(...)`` at once,
    naming the variable, before anything starts."""
    import pytest

    from llamabot.durable import Durable
    from llamabot.durable.config import grace_seconds, liveness_seconds
    from llamabot.errors import SettingsError
    from tests.durable.agents import make_agent

    assert grace_seconds() == 20 and liveness_seconds() == (5, 60)
    monkeypatch.setenv("LLAMABOT_DURABLE_HEARTBEAT_S", "10")
    monkeypatch.setenv("LLAMABOT_DURABLE_ORPHAN_S", "15")
    with pytest.raises(SettingsError, match=r"\$LLAMABOT_DURABLE_ORPHAN_S=15 must be at least twice"):
        Durable(make_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    monkeypatch.setenv("LLAMABOT_DURABLE_ORPHAN_S", "20")
    monkeypatch.setenv("LLAMABOT_DURABLE_GRACE_S", "2.5")
    with pytest.raises(SettingsError, match=r"\$LLAMABOT_DURABLE_GRACE_S='2.5': expected a whole number"):
        Durable(make_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    monkeypatch.setenv("LLAMABOT_DURABLE_GRACE_S", "3")
    assert grace_seconds() == 3 and liveness_seconds() == (10, 20)


def test_dur_db_030_a_sqlite_file_read_by_others_still_switches_to_wal_when_they_let_go(tmp_path):
    """DUR-DB-030: a SQLite file in rollback mode that another connection is reading (a test polling a run, a
    second process) is switched to WAL once the reader lets go, even after SQLite's default 5 s wait: starting
    durable runs no longer fails with "database is locked" under load."""
    import sqlite3
    import threading

    from llamabot.durable.database import sqlite_engine

    path = tmp_path / "runs.sqlite"
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("CREATE TABLE t (x)")
    reader.execute("INSERT INTO t VALUES (1)")
    reader.execute("BEGIN")
    assert reader.execute("SELECT x FROM t").fetchall() == [(1,)]  # a shared lock, held
    release = threading.Timer(5.5, lambda: reader.execute("COMMIT"))
    release.start()
    started = time.monotonic()
    try:
        with sqlite_engine(f"sqlite:///{path}").connect() as conn:
            mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
    finally:
        release.join()
        reader.close()
    assert mode == "wal" and time.monotonic() - started >= 5.0


def test_dur_err_085_a_run_recovered_by_changed_code_fails_naming_the_step_that_changed(tmp_path, files, monkeypatch):
    """A run waits for an approval; the process stops (the run stays PENDING) and restarts with a bot whose model
    is another one. Recovery replays the run's recorded steps: the first is now another step, so the run fails with
    a ``RunChangedError`` naming the run, the step and both names, never DBOS's bare determinism message."""
    from llamabot.durable import RunChangedError, shutdown

    effects, _ = files
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    monkeypatch.delenv("DURABLE_VARIANT", raising=False)
    Durable("tests.durable.agents:make_variant_agent", db=db).start("pay erin", run_id="chg-1")
    deadline = time.monotonic() + 30
    while not show_run("chg-1", db).waiting and time.monotonic() < deadline:
        time.sleep(0.05)
    assert show_run("chg-1", db).waiting["tool"] == "transfer"
    shutdown()  # the process stops: the run stays PENDING, to be recovered
    assert show_run("chg-1", db).status == "PENDING"
    monkeypatch.setenv("DURABLE_VARIANT", "edited-model")
    agent = Durable("tests.durable.agents:make_variant_agent", db=db)  # the restart recovers chg-1
    with pytest.raises(RunChangedError) as caught:
        agent.result("chg-1")
    message = str(caught.value)
    assert "run 'chg-1'" in message and "its step 1 was model:conversation" in message, message
    assert (caught.value.step, caught.value.now) == (1, "model:edited-model")
    assert "model:conversation" in message and "model:edited-model" in message, message
    assert "Check that your workflow is deterministic" not in message
    assert not effects.exists() or "transfer" not in effects.read_text()  # nothing ran
