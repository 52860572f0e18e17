"""A small FastAPI service that answers questions with ONE shared :class:`~llamabot.AsyncAgentBot`.

Run it from the repository root (FastAPI comes with the ``dev`` extra; ``pip install uvicorn`` if needed)::

    uvicorn examples.agent_service:app

then ask::

    curl -s localhost:8000/ask -H 'content-type: application/json' -d '{"question": "What is 23 times 19?"}'
    curl -sN localhost:8000/ask/stream -H 'content-type: application/json' -d '{"question": "What is 2 plus 3?"}'
    curl -s localhost:8000/health

Endpoints:

- ``POST /ask`` ``{"question": "..."}`` -> ``{"answer": ..., "trace_id": "...", "steps": ["multiply", "respond_to_user"]}``
  (``steps``: the tools called, in order, read from the run's own trace).
- ``POST /ask/stream`` -> newline-delimited JSON (``application/x-ndjson``), one run event per line:
  ``{"kind": "decision" | "tool_started" | "tool_finished" | "final_answer" | "error", "trace_id": "...", "data": {...}}``.
  The last line is ``final_answer``, or ``error`` when the run failed (the status is already 200 by then).
- ``GET /health`` -> ``{"status": "ok", "bot_loaded": bool}``.

Durable mode (``create_app(durable=Durable("myapp.bots:make_agent"))``, needs ``llamabot[durable]``): runs are
enqueued and survive restarts of the service; any ``llamabot worker`` on the same database (or this process)
executes them:

- ``POST /runs`` ``{"question": "..."}`` -> 202 ``{"run_id": "..."}`` at once.
- ``GET /runs/{run_id}`` -> ``{"run_id", "status", "answer", "error", "waiting"}`` (``status``: ``ENQUEUED``,
  ``PENDING``, ``SUCCESS``, ``ERROR``...; ``waiting``: the tool call that waits for a person's approval); 404 for
  an unknown id.
- Shutdown (SIGTERM, Ctrl-C): after uvicorn has answered the open requests, the lifespan stops the durable
  runtime gracefully: no new run is dequeued, the steps in flight get ``grace_s`` (default
  ``$LLAMABOT_DURABLE_GRACE_S``, 20 s) to finish and be recorded, the other runs stay PENDING (never ERROR) and
  the next process or a worker on the database goes on with them. ``Durable(..., recover_orphans=True)`` makes
  the service also recover the runs of workers that died.

Request size is bounded: a question longer than ``MAX_QUESTION_CHARS`` (8,000) is rejected with 422; a body
larger than ``MAX_BODY_BYTES`` (64 kB) with 413, whatever its framing: a ``Content-Length`` over the limit is
refused unread, and a body without one (``Transfer-Encoding: chunked``) is read only up to the limit.

Every error is JSON ``{"error": "<message>", "type": "<class>"}`` and never quotes the request back: a run that
raises (model down, tool kept failing, ...) answers 500; an invalid body (an empty question, a field other than
``question``, malformed JSON, text that is not valid Unicode such as a lone surrogate ``\\ud800``) answers 422 with ``"problems"`` (where and what,
without the input); an unknown path 404; anything unexpected 500.

One bot serves every request: ``AsyncAgentBot.arun_with_trace`` keeps all per-run state in the run's own shared
dict and trace, so concurrent requests never see each other's data. The default bot (the calculator tools on the
default model) is built on the first request, so importing this module loads no model.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, StringConstraints
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from llamabot.agents.agentbot import AsyncAgentBot
from llamabot.toolkits.calculator import CALCULATOR_TOOLS

logger = logging.getLogger(__name__)


#: The longest question accepted (characters); longer ones answer 422.
MAX_QUESTION_CHARS = 8_000
#: The largest request body accepted (bytes), whatever its framing; larger ones answer 413.
MAX_BODY_BYTES = 64_000
#: How many validation problems a 422 lists, and how much of each message and location it quotes.
MAX_PROBLEMS, PROBLEM_CHARS = 10, 200


class SafeJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped, so any Python string, a lone surrogate included, renders."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


class AskRequest(BaseModel):
    """The body of ``/ask``, ``/ask/stream`` and ``/runs``: the question and nothing else (an unknown field, such
    as a ``model`` the client believes it chose, is a 422, not silently dropped)."""

    model_config = ConfigDict(extra="forbid")

    question: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUESTION_CHARS)]


class AskResponse(BaseModel):
    """The body of a successful ``/ask``."""

    answer: Any
    trace_id: str
    steps: list[str]


def _jsonable(value: Any) -> Any:
    """``value`` made JSON-safe (anything json cannot encode becomes its ``str``)."""
    return json.loads(json.dumps(value, default=str))


def _error(status: int, message: str, kind: str, **extra: Any) -> SafeJSONResponse:
    return SafeJSONResponse(status_code=status, content={"error": message, "type": kind, **extra})


def _error_response(exc: BaseException) -> JSONResponse:
    logger.exception("agent run failed", exc_info=exc)
    return _error(500, str(exc) or type(exc).__name__, type(exc).__name__)


def _cut(text: Any) -> str:
    text = str(text)
    return text if len(text) <= PROBLEM_CHARS else text[:PROBLEM_CHARS] + "..."


class BoundedBody:
    """ASGI middleware: a request's body is read here, up to ``max_bytes``, whatever its framing, then handed on
    whole; past the limit (a ``Content-Length`` over it, or that many bytes read) the answer is 413 and the rest is
    never read."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send, f"{int(declared)} bytes")
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client is gone: nothing to answer
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, f"more than {self.max_bytes} bytes")
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> Message:
            return whole.pop() if whole else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: str) -> None:
        response = _error(413, f"request body of {size} is over the limit of {self.max_bytes} bytes",
                          "PayloadTooLarge")
        response.headers["connection"] = "close"  # the unread rest of the body ends the connection
        await response(scope, receive, send)


def _event_line(kind: str, trace_id: str, data: dict[str, Any]) -> str:
    return json.dumps({"kind": kind, "trace_id": trace_id, "data": data}, default=str) + "\n"


def create_app(bot: AsyncAgentBot | None = None, durable: Any = None, *, grace_s: float | None = None) -> FastAPI:
    """The service around ``bot``; without one, ``AsyncAgentBot(tools=CALCULATOR_TOOLS)`` built on first use.
    ``durable``: a :class:`llamabot.durable.Durable` that adds ``/runs`` (durable, queued runs) and stops
    gracefully with the service, giving the steps in flight ``grace_s`` seconds (default
    ``$LLAMABOT_DURABLE_GRACE_S``)."""
    app = FastAPI(title="llamabot agent service", default_response_class=SafeJSONResponse,
                  lifespan=None if durable is None else _durable_lifespan(grace_s))
    holder: dict[str, AsyncAgentBot | None] = {"bot": bot}
    app.add_middleware(BoundedBody, max_bytes=MAX_BODY_BYTES)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Any:
        # FastAPI's own 422 quotes the input back (a 60 kB question, twice); this says where and what only.
        errors = exc.errors()
        problems = [{"loc": [_cut(part) for part in error.get("loc", ())], "msg": _cut(error.get("msg", ""))}
                    for error in errors[:MAX_PROBLEMS]]
        summary = "; ".join(f"{'.'.join(map(str, p['loc']))}: {p['msg']}" for p in problems)
        return _error(422, f"invalid request: {summary}", "RequestValidationError", problems=problems)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Any:
        return _error(exc.status_code, _cut(exc.detail), "HTTPException")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Any:
        logger.exception("request failed", exc_info=exc)
        return _error(500, f"internal error ({type(exc).__name__})", type(exc).__name__)

    def get_bot() -> AsyncAgentBot:
        # No await between the check and the assignment: on the event loop this is atomic.
        if holder["bot"] is None:
            holder["bot"] = AsyncAgentBot(tools=CALCULATOR_TOOLS)
        return holder["bot"]

    app.state.get_bot = get_bot

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "bot_loaded": holder["bot"] is not None}

    @app.post("/ask", response_model=AskResponse, responses={500: {"description": "the run failed"}})
    async def ask(request: AskRequest) -> Any:
        try:
            answer, trace = await get_bot().arun_with_trace(request.question)
        except Exception as exc:  # noqa: BLE001 - every failure of the run is reported as a 500
            return _error_response(exc)
        steps = [s.name for s in trace.spans if s.kind == "tool_call"]
        return AskResponse(answer=_jsonable(answer), trace_id=trace.trace_id, steps=steps)

    @app.post("/ask/stream", responses={500: {"description": "the bot could not be created"}})
    async def ask_stream(request: AskRequest) -> Any:
        try:
            current = get_bot()
        except Exception as exc:  # noqa: BLE001
            return _error_response(exc)
        return StreamingResponse(_stream(current.astream, request.question), media_type="application/x-ndjson")

    if durable is not None:
        _add_durable_routes(app, durable)
    return app


def _durable_lifespan(grace_s: float | None) -> Callable[[FastAPI], Any]:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        from llamabot.durable import ashutdown
        from llamabot.durable.config import grace_seconds

        await ashutdown(grace_seconds() if grace_s is None else grace_s)

    return lifespan


def _add_durable_routes(app: FastAPI, durable: Any) -> None:
    from llamabot.durable import UnknownRunError, show_run

    @app.post("/runs", status_code=202)
    async def enqueue_run(request: AskRequest) -> dict[str, str]:
        return {"run_id": await durable.aenqueue(request.question)}

    @app.get("/runs/{run_id}")
    async def get_run(run_id: str) -> Any:
        try:
            run = await asyncio.to_thread(show_run, run_id, durable.db)
        except UnknownRunError as exc:
            return _error(404, str(exc), "UnknownRunError")
        return {"run_id": run.run_id, "status": run.status, "answer": _jsonable(run.result), "error": run.error,
                "waiting": run.waiting}


async def _stream(astream: Callable[[str], AsyncGenerator[Any, None]], question: str) -> AsyncIterator[str]:
    """The run's events as NDJSON lines; a failed run ends the stream with its ``error`` line.

    ``astream`` yields the ``error`` event (with the run's own trace id) and then re-raises; the raise only
    ends the stream here. Closing the stream (client gone) cancels the run.
    """
    events = astream(question)
    try:
        async for event in events:
            yield _event_line(event.kind, event.trace_id, event.data)
    except Exception as exc:  # noqa: BLE001 - already reported as the stream's error event
        logger.exception("agent run failed (stream)", exc_info=exc)
    finally:
        await events.aclose()


app = create_app()
