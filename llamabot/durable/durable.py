"""``Durable``: any graph bot, run durably. Same bot, same answers; the run survives the process.

    agent = Durable("myapp.bots:make_agent")                  # SQLite under the user's data dir by default
    agent = Durable(make_agent, db="postgresql://u@host/db")   # or $LLAMABOT_DB
    agent.run("What is 23 times 19?")                          # sync; returns what bot.arun would
    await agent.arun("...", run_id="order-42")                  # a run id you choose (idempotent: same id, same run)
    run_id = agent.enqueue("...")                              # any worker (`llamabot worker`) runs it
    agent.result(run_id)                                       # wait for it, from any process

The bot comes from a factory (a ``module:attr`` spec or a module-level function) so that a restarted process or
a worker builds the same bot; it is built once per process. The query and the run options (``memory``...) are
stored with the run, so they must be JSON data.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from dbos import DBOS, SetWorkflowID

from llamabot.agents.graphbot import GraphBot
from llamabot.durable import runs
from llamabot.durable.approval import json_data
from llamabot.durable.config import redacted
from llamabot.durable.errors import DurableRuntimeError, RunIdConflictError
from llamabot.durable.factory import factory_spec
from llamabot.durable.runtime import _RUNTIME, _off_the_loop, durable_run, launch
from llamabot.durable.steps import check_inline
from llamabot.tools.tool import Tool


class Durable:
    """Durable runs of the bot ``factory`` builds, kept in ``db``.

    ``executor_id``, ``worker_concurrency``, ``dequeue``, ``recover_orphans``: see
    :func:`~llamabot.durable.runtime.launch` (the process-wide runtime starts with the first ``Durable``; later
    ones must use the same database).
    """

    def __init__(self, factory: str | Callable[[], GraphBot], *, db: str | None = None,
                 executor_id: str | None = None, worker_concurrency: int | None = None, dequeue: bool = True,
                 recover_orphans: bool = False):
        self.factory = factory_spec(factory)
        self.bot: GraphBot = _RUNTIME.bots.bot_for(self.factory)  # fails now, not inside a run, if it cannot build
        tools = getattr(self.bot, "tools", None)
        for tool in tools.values() if isinstance(tools, Mapping) else ():  # an agent tool's timeout: refused now
            if isinstance(tool, Tool):
                check_inline(tool, tool.timeout)
        self.db = launch(db, executor_id=executor_id, worker_concurrency=worker_concurrency, dequeue=dequeue,
                         recover_orphans=recover_orphans)

    def _inputs(self, query: Any, run_id: str | None, options: dict[str, Any]) -> tuple[str, Any, dict[str, Any]]:
        if _RUNTIME.url != self.db:  # shutdown() was called since (or the process moved to another database)
            now = "was shut down" if _RUNTIME.url is None else f"now keeps runs in {redacted(_RUNTIME.url)}"
            raise DurableRuntimeError(
                f"cannot start a durable run on {redacted(self.db)}: the durable runtime of this process {now} "
                "(llamabot.durable.shutdown()); create a new Durable(...) to start it again"
            )
        self._check_options(options)
        json_data(query, "the query")
        for name, value in options.items():
            json_data(value, f"the run option {name!r}")
        return run_id or uuid.uuid4().hex, query, options

    def _check_options(self, options: dict[str, Any]) -> None:
        """``TypeError`` now, before a run is recorded, for an option the bot's runs do not take (else the run
        would be stored and then fail), or ``approver`` (a person decides on durable runs)."""
        owner = f"{type(self.bot).__name__}.run"
        self.bot.check_run_options(options, f" (durable run of {self.factory})")
        if "approver" in options:
            raise TypeError(
                f"{owner}(): approver= does not apply to durable runs (durable run of {self.factory}): a tool that "
                "requires approval waits for a person's decision (llamabot runs approve|reject, or "
                "llamabot.durable.approve/reject)"
            )

    def _start(self, query: Any, run_id: str | None, options: dict[str, Any]) -> Any:
        given, (run_id, query, options) = run_id, self._inputs(query, run_id, options)
        with SetWorkflowID(run_id):
            handle = DBOS.start_workflow(durable_run, self.factory, query, options)
        if given is not None:
            self._same_run(run_id, _off_the_loop(handle.get_status), query, options)  # sync DBOS: not on a loop
        return handle

    async def _astart(self, query: Any, run_id: str | None, options: dict[str, Any]) -> Any:
        given, (run_id, query, options) = run_id, self._inputs(query, run_id, options)
        with SetWorkflowID(run_id):
            handle = await DBOS.start_workflow_async(durable_run, self.factory, query, options)
        if given is not None:
            self._same_run(run_id, await handle.get_status(), query, options)
        return handle

    def _same_run(self, run_id: str, status: Any, query: Any, options: dict[str, Any]) -> None:
        """:class:`RunIdConflictError` when run ``run_id`` (a run id the caller chose, which may name an earlier
        run) was started with another bot, query or options than these: DBOS keeps the first run's inputs, so its
        result would answer another question."""
        stored = getattr(status, "input", None)
        args = list(stored.get("args", ())) if isinstance(stored, dict) else None
        if args == json_data([self.factory, query, options], "the run's inputs"):
            return
        was = "unreadable inputs" if args is None or len(args) != 3 else (
            f"bot {args[0]}, query {json.dumps(args[1], default=repr)[:200]}, options "
            f"{json.dumps(args[2], default=repr)[:200]}")
        raise RunIdConflictError(
            f"run id {run_id!r} names a run started with {was}, not bot {self.factory}, query "
            f"{json.dumps(query)[:200]}, options {json.dumps(options)[:200]}; the same id gives the same run (its "
            "result, or its continuation): give this run another id, or agent.result(run_id) for that run's result"
        )

    def start(self, query: Any, *, run_id: str | None = None, **options: Any) -> str:
        """Start a run in this process and return its id at once (:meth:`result` waits for it, from any process).

        When this process exits before the run ends (the script ends, ``sys.exit``, Ctrl-C), the run is not
        failed: the step in flight (a model call, a tool call) gets ``$LLAMABOT_DURABLE_GRACE_S`` seconds (default
        20) to finish and be recorded, and the run stays PENDING in the database. The next process on the same
        database with the same ``executor_id`` (a restart of this script, or any ``Durable`` with the default id)
        resumes it when it starts; a ``llamabot worker`` on the database resumes it once this process is seen
        gone (at once after a normal exit; after ``$LLAMABOT_DURABLE_ORPHAN_S`` seconds without a heartbeat after
        a kill). Killed outright (SIGKILL, or SIGTERM without a handler), the run stays PENDING too, and the step
        cut off runs again on recovery (at least once: see :func:`~llamabot.durable.steps.current_step`)."""
        return self._start(query, run_id, options).get_workflow_id()

    async def astart(self, query: Any, *, run_id: str | None = None, **options: Any) -> str:
        """Async twin of :meth:`start`. The run executes on this event loop: when ``asyncio.run(main())`` returns
        with the run in flight, asyncio cancels it (it stays PENDING, its step in flight is cut); ``await
        llamabot.durable.ashutdown(grace_s)`` before leaving ``main`` lets that step finish."""
        return (await self._astart(query, run_id, options)).get_workflow_id()

    def run(self, query: Any, *, run_id: str | None = None, **options: Any) -> Any:
        """Run ``query`` durably in this process and return the result. With the ``run_id`` of an earlier run,
        that run's result (or its continuation, if it is still in flight)."""
        return self._start(query, run_id, options).get_result()

    async def arun(self, query: Any, *, run_id: str | None = None, **options: Any) -> Any:
        """Async twin of :meth:`run`."""
        return await (await self._astart(query, run_id, options)).get_result()

    def enqueue(self, query: Any, *, run_id: str | None = None, **options: Any) -> str:
        """Put a run on the queue; a worker on the same database (this process too, unless ``dequeue=False``)
        executes it. Returns the run id."""
        given, (run_id, query, options) = run_id, self._inputs(query, run_id, options)
        with SetWorkflowID(run_id):
            handle = _RUNTIME.queue.enqueue(durable_run, self.factory, query, options)
        if given is not None:
            self._same_run(run_id, _off_the_loop(handle.get_status), query, options)  # sync DBOS: not on a loop
        return handle.get_workflow_id()

    def result(self, run_id: str) -> Any:
        """Wait for run ``run_id`` and return its result (the run's own exception is raised as it was)."""
        return runs.wait_result(run_id, self.db)

    async def aresult(self, run_id: str) -> Any:
        """Async twin of :meth:`result` (waits in a worker thread; the event loop stays free)."""
        return await asyncio.to_thread(runs.wait_result, run_id, self.db)

    async def aenqueue(self, query: Any, *, run_id: str | None = None, **options: Any) -> str:
        """Async twin of :meth:`enqueue`."""
        given, (run_id, query, options) = run_id, self._inputs(query, run_id, options)
        with SetWorkflowID(run_id):
            handle = await _RUNTIME.queue.enqueue_async(durable_run, self.factory, query, options)
        if given is not None:
            self._same_run(run_id, await handle.get_status(), query, options)
        return handle.get_workflow_id()

    def show(self, run_id: str) -> runs.RunInfo:
        return runs.show_run(run_id, self.db)

    def approve(self, run_id: str, arguments: dict[str, Any] | None = None, *, by: str | None = None,
                request: int | None = None) -> dict[str, Any]:
        """See :func:`llamabot.durable.runs.approve`."""
        return runs.approve(run_id, arguments, self.db, by=by, request=request)

    def reject(self, run_id: str, reason: str = "", *, by: str | None = None,
               request: int | None = None) -> dict[str, Any]:
        """See :func:`llamabot.durable.runs.reject`."""
        return runs.reject(run_id, reason, self.db, by=by, request=request)

    def cancel(self, run_id: str) -> runs.RunInfo:
        """Cancel a run that is not over (see :func:`llamabot.durable.runs.cancel`)."""
        return runs.cancel(run_id, self.db)

    def resume(self, run_id: str, *, force: bool = False) -> runs.RunInfo:
        """Recover a PENDING run of a dead executor, or a cancelled run, now (see
        :func:`llamabot.durable.runs.resume`)."""
        return runs.resume(run_id, self.db, force=force)
