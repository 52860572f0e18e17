"""Typed errors of durable runs. Each names what was wrong (the URL, the run id, the tool) and what to do."""

from __future__ import annotations

from typing import Any

from llamabot.errors import LlamabotError
from llamabot.tools.approval import ToolRejectedError  # noqa: F401 - one rejection for every kind of run


class DurableError(LlamabotError):
    """Base class of the errors of :mod:`llamabot.durable`."""


class DatabaseURLError(DurableError, ValueError):
    """A database URL that is malformed or names a database kind DBOS cannot use (only SQLite and PostgreSQL)."""


class DatabaseUnreachableError(DurableError):
    """The database could not be reached or opened (wrong host, port, credentials, or an unwritable file)."""


class DurableRuntimeError(DurableError):
    """The process-wide durable runtime is in the wrong state (not launched, or launched on another database)."""


class BotFactoryError(DurableError, TypeError):
    """A bot factory that another process cannot rebuild: not a ``module:attr`` spec, not importable, or it does
    not give a graph bot."""


class NotStorableError(DurableError, TypeError):
    """A value that must be stored as JSON with the run (the query, an option, a tool's arguments) cannot be."""


class UnknownRunError(DurableError, LookupError):
    """No durable run has this id in the database."""


class NotWaitingError(DurableError):
    """The run is not waiting for an approval (it finished, failed, or is still working), or waits for another
    tool call than the one named."""


class RunFinishedError(DurableError):
    """The run is finished (SUCCESS, ERROR, or CANCELLED for a cancel): there is nothing to cancel or resume."""


class RunInFlightError(DurableError):
    """The run needs no recovery: it is queued, or in flight on an executor that is alive (its heartbeat is
    recent), or another process is recovering it right now."""


class RunIdConflictError(DurableError, ValueError):
    """A run id given again with another query, other options or another bot than the run it names: its result
    would answer a question that was not asked. Nothing was started."""


class RunChangedError(DurableError):
    """A recovered run met other code than it started with: replaying its recorded steps, step ``step`` is now
    ``now`` where the run recorded ``recorded`` (the bot's factory, tools, model or prompts changed, or a tool
    chose differently). A durable run continues only with the code it started with."""

    def __init__(self, run_id: str, step: int, now: str, recorded: str):
        self.run_id, self.step, self.now, self.recorded = run_id, step, now, recorded
        super().__init__(
            f"run {run_id!r} cannot go on with the bot as it is now: its step {step} was {recorded} when the run "
            f"started and is {now} now (the bot's code, tools, model or prompts changed since). A durable run "
            "replays its recorded steps, so it needs the code it started with: restore that code to finish it, or "
            f"cancel it (llamabot runs cancel {run_id}) and start a new run"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.run_id, self.step, self.now, self.recorded)


class RunFailedError(DurableError):
    """A durable run ended with an error, or was cancelled; the message carries the run id and the cause."""


class RecordRefusedError(DurableError, ValueError):
    """A record of the durable-runs database that llamabot will not load: not its JSON (a pickle, from an earlier
    version or written by someone with access to the database), or naming a class that may not be restored.
    Nothing of it was executed."""


class AlreadyDecidedError(NotWaitingError):
    """The approval was decided already: the first decision stands (``verdict``, ``by``, ``at_ms``: who decided
    what, and when, in milliseconds since the epoch) and this one was not sent."""

    def __init__(self, run_id: str, request: int, verdict: str, by: str = "", at_ms: int | None = None):
        self.run_id, self.request, self.verdict, self.by, self.at_ms = run_id, request, verdict, by, at_ms
        when = ""
        if at_ms is not None:
            import datetime

            stamp = datetime.datetime.fromtimestamp(at_ms / 1000, datetime.timezone.utc)
            when = f" at {stamp.isoformat(timespec='seconds').replace('+00:00', 'Z')}"
        who = f" by {by}" if by else ""
        past = "approved" if verdict == "approve" else "rejected"
        super().__init__(f"approval #{request} of run {run_id} was already decided: {past}{who}{when}; the first "
                         "decision stands and this one was not sent")
