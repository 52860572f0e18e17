"""Durable runs (``pip install "llamabot[durable]"``): any graph bot's run as a DBOS workflow whose model calls,
tool calls and approvals are checkpointed steps, in SQLite by default or PostgreSQL for many workers.

    from llamabot.durable import Durable
    agent = Durable("myapp.bots:make_agent")          # db=... or $LLAMABOT_DB; default: a SQLite file
    agent.run("What is 23 times 19?")

See ``docs/design/durable/LLD.md``.
"""

from llamabot.durable.config import resolve_db_url
from llamabot.durable.drain import RunParked
from llamabot.durable.durable import Durable
from llamabot.durable.errors import (
    AlreadyDecidedError,
    BotFactoryError,
    DatabaseUnreachableError,
    DatabaseURLError,
    DurableError,
    DurableRuntimeError,
    NotStorableError,
    NotWaitingError,
    RecordRefusedError,
    RunChangedError,
    RunFailedError,
    RunFinishedError,
    RunIdConflictError,
    RunInFlightError,
    ToolRejectedError,
    UnknownRunError,
)
from llamabot.durable.runs import RunInfo, approve, cancel, list_runs, reject, resume, show_run, wait_result
from llamabot.durable.runtime import ashutdown, launch, shutdown
from llamabot.durable.steps import current_step
from llamabot.durable.worker import run_worker

__all__ = [
    "AlreadyDecidedError", "BotFactoryError", "DatabaseURLError", "DatabaseUnreachableError", "Durable",
    "DurableError", "DurableRuntimeError", "NotStorableError", "NotWaitingError", "RecordRefusedError",
    "RunChangedError", "RunFailedError", "RunFinishedError", "RunIdConflictError", "RunInFlightError", "RunInfo", "RunParked", "ToolRejectedError",
    "UnknownRunError", "approve", "ashutdown", "cancel", "current_step", "launch", "list_runs", "reject", "resolve_db_url",
    "resume", "run_worker", "shutdown", "show_run", "wait_result",
]
