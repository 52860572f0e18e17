"""The example agent service (examples/agent_service.py): one AsyncAgentBot shared by concurrent requests.

Requirements (AGT-SVC):

- 010: When many requests arrive concurrently, the service shall answer each with its own run's answer, trace id
  and tool steps.
- 020: When a client asks on ``/ask/stream``, the service shall stream the run's events as NDJSON, in order,
  ending with ``final_answer``.
- 030: If a run raises, then the service shall answer HTTP 500 with the error message (``/ask``) or end the stream
  with one ``error`` event (``/ask/stream``).
- 035: If the question is empty, then the service shall reject the request with HTTP 422 (036: an unknown
  field too, naming it).
- 040: When ``/health`` is requested, the service shall answer ``ok`` without loading a model.
- 050: If a question is longer than 8,000 characters, then the service shall answer 422; if a request body is
  larger than 64 kB, then the service shall answer 413 without reading it.
- 060: Where the service runs in durable mode, when a client posts a question to ``/runs``, the service shall
  answer 202 with a run id at once, and ``/runs/{id}`` shall give the run's status and, once done, its answer.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `examples` is a package at the repository root

from examples.agent_service import create_app  # noqa: E402
from llamabot.agents.agentbot import AsyncAgentBot  # noqa: E402
from llamabot.models.reply import ModelRequest  # noqa: E402
from llamabot.models.scripted import ScriptedModel, tool_call  # noqa: E402
from llamabot.toolkits.calculator import CALCULATOR_TOOLS  # noqa: E402

QUESTION = re.compile(r"what is (\d+) plus one", re.IGNORECASE)


def plus_one_responder(request: ModelRequest) -> object:
    """First ``add(a=N, b=1)``; once the conversation holds a tool result, ``respond_to_user`` with it.

    Tool results have role ``tool``, so ``last_user_text`` stays the question throughout the run.
    """
    tool_results = [m for m in request.messages if m.get("role") == "tool"]
    if tool_results:
        return tool_call("respond_to_user", response=tool_results[-1]["content"])
    match = QUESTION.search(request.last_user_text)
    assert match, f"unexpected question: {request.last_user_text!r}"
    return tool_call("add", a=int(match.group(1)), b=1)


def plus_one_bot() -> AsyncAgentBot:
    return AsyncAgentBot(tools=CALCULATOR_TOOLS, model=ScriptedModel(responder=plus_one_responder, latency_s=0.01))


def client_for(bot: AsyncAgentBot) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(bot)), base_url="http://test")


def ndjson(response: httpx.Response) -> list[dict]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


async def test_agt_svc_010_concurrent_requests_each_get_their_own_answer():
    numbers = list(range(1000, 1200))  # 200 distinct questions, all in flight at once on one bot
    async with client_for(plus_one_bot()) as client:
        responses = await asyncio.gather(
            *(client.post("/ask", json={"question": f"What is {n} plus one?"}) for n in numbers)
        )
    trace_ids = set()
    for n, response in zip(numbers, responses, strict=True):
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["answer"] == str(n + 1), (n, body)  # integer arithmetic stays integer: "1043" for 1042
        assert body["steps"] == ["add", "respond_to_user"], body
        trace_ids.add(body["trace_id"])
    assert len(trace_ids) == len(numbers)


async def test_agt_svc_020_stream_endpoint_emits_events_in_order():
    async with client_for(plus_one_bot()) as client:
        response = await client.post("/ask/stream", json={"question": "What is 41 plus one?"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    events = ndjson(response)
    assert "".join(e["data"]["delta"] for e in events if e["kind"] == "token") == "42"  # the answer as written
    events = [e for e in events if e["kind"] != "token"]
    assert [e["kind"] for e in events] == [
        "decision", "tool_started", "tool_finished",
        "decision", "tool_started", "tool_finished",
        "final_answer",
    ]
    assert len({e["trace_id"] for e in events}) == 1 and events[0]["trace_id"]
    assert events[0]["data"]["calls"] == ["add"]
    assert events[1]["data"] == {"tool": "add", "arguments": {"a": 41.0, "b": 1.0}}
    assert events[2]["data"]["tool"] == "add" and events[2]["data"]["result"] == 42.0
    assert events[4]["data"]["tool"] == "respond_to_user"
    assert events[-1]["data"]["result"] == "42" and events[-1]["data"]["usage"]["requests"] == 2


async def test_agt_svc_030_errors_become_http_500_with_message():
    def broken(request: ModelRequest) -> object:
        return RuntimeError("the model server is down")

    bot = AsyncAgentBot(tools=CALCULATOR_TOOLS, model=ScriptedModel(responder=broken, latency_s=0.01))
    async with client_for(bot) as client:
        response = await client.post("/ask", json={"question": "What is 1 plus one?"})
        streamed = await client.post("/ask/stream", json={"question": "What is 1 plus one?"})
    assert response.status_code == 500
    assert response.json()["error"] == "the model server is down"
    assert response.json()["type"] == "RuntimeError"
    events = ndjson(streamed)
    assert [e["kind"] for e in events] == ["error"]
    assert events[0]["data"]["error"] == "RuntimeError: the model server is down"
    assert events[0]["data"]["usage"]["requests"] == 0  # what the run spent before it failed


@pytest.mark.parametrize("body", [{"question": ""}, {"question": "   "}, {}])
async def test_agt_svc_035_empty_question_is_rejected_with_422(body):
    async with client_for(plus_one_bot()) as client:
        response = await client.post("/ask", json=body)
        streamed = await client.post("/ask/stream", json=body)
    assert response.status_code == 422
    assert streamed.status_code == 422


async def test_agt_svc_036_unknown_fields_are_rejected_with_422_naming_them():
    """An unknown field (a typo, or a ``model`` the client thinks it chose) is refused, not silently dropped."""
    body = {"question": "What is 1 plus one?", "model": "gpt-4"}
    async with client_for(plus_one_bot()) as client:
        responses = [await client.post(path, json=body) for path in ("/ask", "/ask/stream")]
    for response in responses:
        assert response.status_code == 422
        assert response.json()["problems"][0]["loc"] == ["body", "model"]
        assert "gpt-4" not in response.text  # the input is never quoted back


async def test_agt_svc_040_health():
    import examples.agent_service as service

    # The module-level app builds its default bot lazily: importing it and asking /health loads no model.
    transport = httpx.ASGITransport(app=service.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "bot_loaded": False}

    async with client_for(plus_one_bot()) as client:
        response = await client.get("/health")
    assert response.json() == {"status": "ok", "bot_loaded": True}


async def test_agt_svc_050_oversized_requests_are_refused():
    """AGT-SVC-050: a question over 8,000 characters answers 422; a body over 64 kB answers 413 unread."""
    from examples.agent_service import MAX_BODY_BYTES, MAX_QUESTION_CHARS

    async with client_for(plus_one_bot()) as client:
        long_question = await client.post("/ask", json={"question": "x" * (MAX_QUESTION_CHARS + 1)})
        huge_body = await client.post("/ask", content=b'{"question": "' + b"y" * MAX_BODY_BYTES + b'"}',
                                      headers={"content-type": "application/json"})
        fine = await client.post("/ask", json={"question": "What is 4 plus one?"})
    assert long_question.status_code == 422
    assert huge_body.status_code == 413 and "over the limit" in huge_body.json()["error"]
    assert fine.status_code == 200 and fine.json()["answer"] == "5"


async def test_agt_svc_060_durable_mode_enqueues_and_polls_by_run_id(tmp_path, monkeypatch):
    """AGT-SVC-060, DUR-SVC-010: POST /runs answers 202 with a run id at once; GET /runs/{id} gives the status,
    then the answer; an unknown id answers 404."""
    from llamabot.durable import Durable, shutdown

    monkeypatch.setenv("DURABLE_CALLS", "2")
    app = create_app(durable=Durable("tests.durable.agents:make_agent", db=f"sqlite:///{tmp_path / 's.sqlite'}"))
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            started = await client.post("/runs", json={"question": "service run"})
            assert started.status_code == 202
            run_id = started.json()["run_id"]
            for _ in range(200):
                polled = (await client.get(f"/runs/{run_id}")).json()
                if polled["status"] == "SUCCESS":
                    break
                await asyncio.sleep(0.05)
            missing = await client.get("/runs/no-such-run")
    finally:
        shutdown()
    assert polled == {"run_id": run_id, "status": "SUCCESS", "answer": "service run -> recorded 1; recorded 2",
                      "error": None, "waiting": None}
    assert missing.status_code == 404 and "no-such-run" in missing.json()["error"]
