"""The console's web app: server-rendered pages over the runs' database, live updates over server-sent events,
and approvals decided with the same functions as ``llamabot runs approve|reject``.

Pages: ``/runs`` (newest first, ``?status=``, keyset-paginated with ``?after=``), ``/runs/{id}`` (question,
answer, approval form, decisions, trace tree and timeline, the bot's graph; ``/runs/{id}/live`` is its changing
part, ``/runs/{id}/events`` says when it changed), ``/approvals`` (every waiting call). ``POST
/runs/{id}/approve`` and ``/runs/{id}/reject`` change state (CSRF-checked, :mod:`llamabot.console.security`).
Every value is escaped by Jinja2's autoescape: a tool argument ``<script>`` is shown as text.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from llamabot.console.graph_view import draw
from llamabot.console.reader import FILTERS, FINISHED, RunRow, RunsReader
from llamabot.console.security import Gate, check_csrf
from llamabot.console.trace_view import executions
from llamabot.durable import runs
from llamabot.durable.config import redacted
from llamabot.durable.decisions import default_decider
from llamabot.durable.errors import DurableError

HERE = Path(__file__).parent
#: Seconds between two looks at a run for its live page.
POLL_S = 0.5
#: Spans a run page draws per execution unless asked for all (``?all=1``).
SPAN_LIMIT = 500
#: The largest form accepted (bytes): edited arguments included.
MAX_FORM_BYTES = 256_000


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(ms=_ms, when=_when, cost=_cost, short=_short, text=_text, json=_json,
                       tojson_pretty=lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=repr),
                       query=lambda d: urlencode({k: v for k, v in d.items() if v}),
                       segment=lambda v: quote(str(v), safe=""))
    return env


def create_app(db: str | None = None, *, token: str | None = None) -> FastAPI:
    """The console's app on the runs' database ``db`` (resolved as for durable runs). ``token``: required on
    every request when set (:mod:`llamabot.console.security`); :func:`llamabot.console.serve` refuses a
    non-loopback address without one."""
    reader = RunsReader(db)
    env = _environment()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        reader.close()

    app = FastAPI(title="llamabot console", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    def page(request: Request, template: str, code: int = 200, **values: Any) -> HTMLResponse:
        html = env.get_template(template).render(csrf=request.state.csrf, db=redacted(reader.url), **values)
        return HTMLResponse(html, code, headers={"Cache-Control": "no-store"})

    def run_values(run: RunRow, now_ms: float, everything: bool = False) -> dict[str, Any]:
        spans = executions(reader.spans(run.run_id), now_ms, None if everything else SPAN_LIMIT)
        return {"run": run, "finished": run.status in FINISHED, "decisions": reader.decisions(run.run_id),
                "executions": spans, "everything": everything}

    def graph_values(run: RunRow) -> dict[str, Any]:
        source = reader.graph(run.bot)
        return {"graph": source, "drawing": draw(source)}

    def unknown(request: Request, run_id: str) -> HTMLResponse:
        return page(request, "message.html", 404, heading="Unknown run", run_id=None,
                    message=f"no durable run has the id {run_id!r}")

    @app.get("/")
    def home() -> RedirectResponse:
        return RedirectResponse("/runs", 303)

    @app.get("/find")
    def find(run: str = "") -> RedirectResponse:
        return RedirectResponse(f"/runs/{quote(run.strip(), safe='')}" if run.strip() else "/runs", 303)

    @app.get("/runs")
    def runs_list(request: Request, status: str | None = None, after: str | None = None) -> HTMLResponse:
        if status and status not in FILTERS:
            return page(request, "message.html", 400, heading="Unknown status", run_id=None,
                        message=f"unknown status {status!r}; use one of {', '.join(FILTERS)}")
        try:
            found = reader.page(status or None, after)
        except ValueError as exc:
            return page(request, "message.html", 400, heading="Bad cursor", run_id=None, message=str(exc))
        return page(request, "runs.html", page=found, status=status, cursor=after, filters=list(FILTERS))

    @app.get("/runs/{run_id}")
    def run_page(request: Request, run_id: str, decided: str | None = None, all: bool = False) -> HTMLResponse:  # noqa: A002
        run = reader.run(run_id)
        if run is None:
            return unknown(request, run_id)
        flash = {"approve": "Approved: the run goes on in its worker.",
                 "reject": "Rejected: the model is shown the rejection.",
                 "cancel": "Cancelled: the run stops at its next step."}.get(decided or "")
        return page(request, "run.html", flash=flash, **graph_values(run), approval_error=None,
                    **run_values(run, time.time() * 1000, all))

    @app.get("/runs/{run_id}/live")
    def run_live(request: Request, run_id: str, all: bool = False) -> HTMLResponse:  # noqa: A002
        run = reader.run(run_id)
        if run is None:
            return unknown(request, run_id)
        return page(request, "live.html", approval_error=None, **run_values(run, time.time() * 1000, all))

    @app.get("/runs/{run_id}/spans/{trace_id}/{span_id}")
    def span_details(request: Request, run_id: str, trace_id: str, span_id: int) -> HTMLResponse:
        span = reader.span(run_id, trace_id, span_id)
        if span is None:
            return page(request, "message.html", 404, heading="Unknown span", run_id=run_id,
                        message=f"run {run_id!r} has no span {trace_id}:{span_id}")
        details = json.dumps(span.attributes, indent=2, ensure_ascii=False, default=repr)
        return page(request, "span.html", details=details)

    @app.get("/runs/{run_id}/events")
    async def run_events(run_id: str) -> StreamingResponse:
        async def changes() -> AsyncIterator[str]:
            seen, quiet = None, 0.0
            while True:
                stamp = await asyncio.to_thread(reader.stamp, run_id)
                if stamp is None:
                    yield "event: end\ndata: unknown\n\n"
                    return
                status = stamp[0]
                if stamp != seen:
                    if seen is not None:
                        yield f"event: change\ndata: {status}\n\n"
                    seen, quiet = stamp, 0.0
                if status in ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"):
                    yield f"event: end\ndata: {status}\n\n"
                    return
                quiet += POLL_S
                if quiet >= 15:  # a comment keeps proxies from closing an idle stream
                    yield ": waiting\n\n"
                    quiet = 0.0
                await asyncio.sleep(POLL_S)

        return StreamingResponse(changes(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @app.get("/approvals")
    def approvals(request: Request) -> HTMLResponse:
        waiting = reader.waiting_runs()
        return page(request, "approvals.html", runs=waiting, waiting_count=len(waiting))

    async def decide(request: Request, run_id: str, verdict: str) -> Response:
        form = await _form(request)
        if form is None:
            return page(request, "message.html", 413, heading="Form too large", run_id=run_id,
                        message=f"a decision's form is at most {MAX_FORM_BYTES} bytes")
        refused = check_csrf(request, form)
        if refused is not None:
            return page(request, "message.html", 403, heading="Refused", run_id=run_id, message=refused)
        run = await asyncio.to_thread(reader.run, run_id)
        if run is None:
            return unknown(request, run_id)
        problem = None if verdict == "cancel" else _stale(run, form.get("request"))
        arguments = None
        if problem is None and verdict == "approve":
            arguments, problem = _edited(form)
        if problem is None:
            try:
                # the approval on the page, named: a run that moved on since is refused, not decided blindly
                if verdict == "approve":
                    await asyncio.to_thread(runs.approve, run_id, arguments, reader.url, by=_decider(),
                                            request=int(form["request"]))
                elif verdict == "reject":
                    await asyncio.to_thread(runs.reject, run_id, form.get("reason", ""), reader.url, by=_decider(),
                                            request=int(form["request"]))
                else:
                    await asyncio.to_thread(runs.cancel, run_id, reader.url)
            except DurableError as exc:
                problem = str(exc)
        if problem is not None:
            run = await asyncio.to_thread(reader.run, run_id) or run
            values = await asyncio.to_thread(run_values, run, time.time() * 1000)
            graph = await asyncio.to_thread(graph_values, run)
            shown = {"error": problem, "approval_error": None} if verdict == "cancel" else {"approval_error": problem}
            return page(request, "run.html", 409, flash=None, **graph, **shown, **values)
        return RedirectResponse(f"/runs/{quote(run_id, safe='')}?decided={verdict}", 303)

    @app.post("/runs/{run_id}/approve")
    async def approve(request: Request, run_id: str) -> Response:
        return await decide(request, run_id, "approve")

    @app.post("/runs/{run_id}/reject")
    async def reject(request: Request, run_id: str) -> Response:
        return await decide(request, run_id, "reject")

    @app.post("/runs/{run_id}/cancel")
    async def cancel(request: Request, run_id: str) -> Response:
        return await decide(request, run_id, "cancel")

    return Gate(app, token)  # type: ignore[return-value]


async def _form(request: Request) -> dict[str, str] | None:
    """The url-encoded form of ``request``; ``None`` when it is larger than :data:`MAX_FORM_BYTES`."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def _stale(run: RunRow, request: str | None) -> str | None:
    """Why a decision made on the page does not apply to the run as it is now, or ``None``."""
    if run.waiting is None:
        return f"run {run.run_id} no longer waits for an approval (it is {run.status})"
    if str(run.waiting.get("request")) != (request or ""):
        return (f"run {run.run_id} now waits for approval #{run.waiting.get('request')} "
                f"({run.waiting.get('tool')}), not the one on your page: look at it and decide again")
    return None


def _edited(form: dict[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    """The edited arguments (``None``: the model's own, unchanged), or why they are refused."""
    text = form.get("arguments", "")
    try:
        arguments = json.loads(text) if text.strip() else None
        original = json.loads(form.get("original") or "null")
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not JSON: {exc}"
    if arguments is not None and not isinstance(arguments, dict):
        return None, "the arguments must be a JSON object, like {\"amount\": 5}"
    return (None if arguments == original else arguments), None


def _decider() -> str:
    return f"console:{default_decider()}"


def _ms(value: float | None) -> str:
    if value is None:
        return ""
    if value < 1000:
        return f"{value:.1f} ms"
    seconds = value / 1000
    return f"{seconds:.2f} s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _when(ms: float | None) -> str:
    if ms is None:
        return ""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _cost(value: float | None) -> str:
    return "" if value is None else f"${value:.4f}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def _short(value: Any, limit: int = 100) -> str:
    text = "" if value is None else _text(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
