"""The first decision on an approval wins, atomically, whoever sends the others and from wherever.

Each decision is recorded in the table ``llamabot_decisions`` of the runs' database, one row per approval (primary
key: run id and approval number), **in the same transaction** that sends it to the run (DBOS's
``send_in_transaction``). Of two decisions sent at once, from two processes or two threads, the database lets one
insert its row; the other finds that row (PostgreSQL makes it wait for the first to commit; SQLite's
``BEGIN IMMEDIATE`` lets one writer in at a time) and is refused with :class:`AlreadyDecidedError` naming the first:
its verdict, who sent it and when. A decision that cannot be sent is not recorded (the transaction rolls back).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import socket
import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from dbos import DBOSClient
from sqlalchemy.dialects import postgresql, sqlite

from llamabot.durable.approval import APPROVAL_TOPIC, Decision
from llamabot.durable.database import engine_with
from llamabot.durable.errors import AlreadyDecidedError

METADATA = sa.MetaData()
DECISIONS = sa.Table(
    "llamabot_decisions", METADATA,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("request", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("verdict", sa.Text, nullable=False),
    sa.Column("arguments", sa.Text, nullable=True),  # JSON text, or NULL: the model's own arguments
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("decided_by", sa.Text, nullable=False),
    sa.Column("decided_at_ms", sa.BigInteger, nullable=False),
)


@dataclass(frozen=True, slots=True)
class Recorded:
    """A decision as recorded: what was decided, by whom, when (milliseconds since the epoch)."""

    decision: Decision
    by: str
    at_ms: int

    def refusal(self, run_id: str) -> AlreadyDecidedError:
        return AlreadyDecidedError(run_id, self.decision.request, self.decision.verdict, self.by, self.at_ms)


def default_decider() -> str:
    """Who decides when no one is named: ``user@host`` of this process."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment (a container without USER)
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def decisions_engine(url: str) -> contextlib.AbstractContextManager[sa.Engine]:
    """An engine on the runs' database (like DBOS's: IMMEDIATE transactions on SQLite) with the decisions table."""
    return engine_with(url, METADATA)


def send_first(engine: sa.Engine, c: DBOSClient, run_id: str, decision: Decision, by: str) -> Recorded:
    """Record ``decision`` and send it to run ``run_id`` in one transaction, unless its approval was decided
    already: then :class:`AlreadyDecidedError` naming the first decision, and nothing is sent."""
    recorded = Recorded(decision, by, int(time.time() * 1000))
    row = {"run_id": run_id, "request": decision.request, "verdict": decision.verdict, "reason": decision.reason,
           "arguments": None if decision.arguments is None else json.dumps(decision.arguments),
           "decided_by": by, "decided_at_ms": recorded.at_ms}
    insert = sqlite.insert if engine.dialect.name == "sqlite" else postgresql.insert
    with engine.begin() as conn:
        statement = insert(DECISIONS).values(row).on_conflict_do_nothing().returning(DECISIONS.c.request)
        if conn.execute(statement).first() is None:  # the row was there: someone decided first
            first = _read(conn, run_id, decision.request)
            raise (first or recorded).refusal(run_id)
        c.send_in_transaction(conn, run_id, decision.to_message(), APPROVAL_TOPIC,
                              idempotency_key=f"{run_id}:approval:{decision.request}")
    return recorded


def last_decided(engine: sa.Engine, run_id: str) -> Recorded | None:
    """The latest recorded decision of run ``run_id`` (the highest approval number), if any."""
    with engine.connect() as conn:
        request = conn.execute(sa.select(sa.func.max(DECISIONS.c.request)).where(DECISIONS.c.run_id == run_id)).scalar()
        return None if request is None else _read(conn, run_id, request)


def decided(engine: sa.Engine, run_id: str, request: int) -> Recorded | None:
    """The recorded decision on approval ``request`` of run ``run_id``, if any."""
    with engine.connect() as conn:
        return _read(conn, run_id, request)


def _read(conn: sa.Connection, run_id: str, request: int) -> Recorded | None:
    row = conn.execute(sa.select(DECISIONS).where(DECISIONS.c.run_id == run_id,
                                                  DECISIONS.c.request == request)).mappings().first()
    if row is None:
        return None
    arguments: Any = None if row["arguments"] is None else json.loads(row["arguments"])
    decision = Decision(row["request"], row["verdict"], arguments, row["reason"])
    return Recorded(decision, row["decided_by"], row["decided_at_ms"])
