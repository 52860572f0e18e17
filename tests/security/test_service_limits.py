"""The example service (examples/agent_service.py) under hostile requests (HARD-SVC-*), served by a real uvicorn on
a loopback port and spoken to in raw HTTP/1.1, chunked bodies included."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `examples` is a package at the repository root

from examples.agent_service import MAX_BODY_BYTES, create_app  # noqa: E402
from llamabot.agents.agentbot import AsyncAgentBot  # noqa: E402
from llamabot.models.scripted import ScriptedModel, tool_call  # noqa: E402
from llamabot.toolkits.calculator import CALCULATOR_TOOLS  # noqa: E402
from tests.fixtures.mcp_helpers import free_port  # noqa: E402

ANSWER_WITH_SURROGATE = "half a pair: \ud800"


def answering_bot() -> AsyncAgentBot:
    """Answers every question with a text holding a lone surrogate (what a model may well write)."""
    model = ScriptedModel(responder=lambda request: tool_call("respond_to_user", response=ANSWER_WITH_SURROGATE))
    return AsyncAgentBot(tools=CALCULATOR_TOOLS, model_name=model)


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[str, int]]:
    """The service on a real uvicorn in a thread: ``(host, port)``."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(answering_bot()), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield "127.0.0.1", port
    server.should_exit = True
    thread.join(10)


def chunked_head(path: str = "/ask") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def read_response(sock: socket.socket, seconds: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one HTTP/1.1 response (read until the body is whole or the server closes)."""
    sock.settimeout(seconds)
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, f"the server closed the connection without an answer: {data[:200]!r}"
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        piece = sock.recv(65536)
        if not piece:
            break
        body += piece
    return int(lines[0].split()[1]), headers, body


# -- HARD-SVC-010: the body limit holds whatever the framing -------------------------------------------------------


def test_hard_svc_010_a_chunked_body_over_the_limit_answers_413_before_it_ends(service):
    with socket.create_connection(service, timeout=10) as sock:
        sock.sendall(chunked_head() + chunk(b'{"question": "'))
        for _ in range(MAX_BODY_BYTES // 1000 + 8):  # 8 kB past the limit, in 1 kB chunks; the body never ends
            sock.sendall(chunk(b"y" * 1000))
        status, headers, body = read_response(sock)
    assert status == 413 and headers["content-type"] == "application/json"
    assert json.loads(body) == {"error": f"request body of more than {MAX_BODY_BYTES} bytes is over the limit of "
                                         f"{MAX_BODY_BYTES} bytes", "type": "PayloadTooLarge"}


def test_hard_svc_010_a_40_mb_chunked_body_is_not_read_past_the_limit(service):
    """The client cannot push the whole body: the server stops reading at the limit and closes the connection."""
    sent, piece = 0, chunk(b"z" * 65536)
    with socket.create_connection(service, timeout=10) as sock:
        sock.settimeout(5)
        sock.sendall(chunked_head() + chunk(b'{"question": "'))
        with contextlib.suppress(OSError):  # a reset connection or a send that blocks: the server stopped reading
            while sent < 40 * 2**20:
                sock.sendall(piece)
                sent += len(piece)
    assert sent < 16 * 2**20, f"the server read {sent} bytes of a body limited to {MAX_BODY_BYTES}"


def test_hard_svc_010_a_content_length_over_the_limit_answers_413_unread(service):
    with socket.create_connection(service, timeout=10) as sock:
        sock.sendall(b"POST /ask HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 200000000\r\n\r\n" + b"x" * 1000)
        status, _, body = read_response(sock)
    assert status == 413 and json.loads(body)["type"] == "PayloadTooLarge"


def test_hard_svc_010_a_chunked_body_under_the_limit_is_served(service):
    question = b'{"question": "What is 1 plus one?"}'
    with socket.create_connection(service, timeout=10) as sock:
        sock.sendall(chunked_head() + chunk(question[:10]) + chunk(question[10:]) + b"0\r\n\r\n")
        status, _, body = read_response(sock)
    assert status == 200, body
    assert json.loads(body)["answer"] == ANSWER_WITH_SURROGATE  # escaped on the wire, whole after decoding


# -- HARD-SVC-020: errors never quote the request back --------------------------------------------------------------


def test_hard_svc_020_a_long_question_is_refused_without_being_echoed(service):
    host, port = service
    response = httpx.post(f"http://{host}:{port}/ask", json={"question": "q" * 60_000}, timeout=10)
    assert response.status_code == 422 and response.headers["content-type"] == "application/json"
    assert len(response.content) < 2_000 and "qqqq" not in response.text
    body = response.json()
    assert body["type"] == "RequestValidationError" and "at most 8000 characters" in body["error"]
    assert body["problems"] == [{"loc": ["body", "question"], "msg": "String should have at most 8000 characters"}]


def test_hard_svc_020_an_unknown_field_name_is_quoted_at_most_in_part(service):
    host, port = service
    response = httpx.post(f"http://{host}:{port}/ask", content=json.dumps({"k" * 50_000: 1}), timeout=10,
                          headers={"content-type": "application/json"})
    assert response.status_code == 422 and len(response.content) < 2_000


# -- HARD-SVC-030: every error is JSON -----------------------------------------------------------------------------


@pytest.mark.parametrize("body, status", [
    (b'{"question": "\\ud800' + b"x" * 8_001 + b'"}', 422),  # a lone surrogate, and too long: FastAPI echoed it
    (b'{"question": "\\udc00 why?"}', 422),  # a lone surrogate the model would be sent
    (b'{"question": "\xff\xfe"}', 400),  # not UTF-8
    (b'{"question": ', 422),  # malformed JSON
    (b"[1, 2]", 422),  # not an object
])
def test_hard_svc_030_bad_bodies_answer_json_errors(service, body, status):
    host, port = service
    response = httpx.post(f"http://{host}:{port}/ask", content=body, timeout=10,
                          headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert set(response.json()) >= {"error", "type"}


def test_hard_svc_030_a_lone_surrogate_question_is_refused_saying_why(service):
    host, port = service
    response = httpx.post(f"http://{host}:{port}/ask", content=b'{"question": "\\ud800 why?"}', timeout=10,
                          headers={"content-type": "application/json"})
    assert response.status_code == 422 and "unable to parse raw data as a unicode string" in response.json()["error"]


def test_hard_svc_030_unknown_paths_and_methods_answer_json(service):
    host, port = service
    missing = httpx.get(f"http://{host}:{port}/nope", timeout=10)
    wrong_method = httpx.get(f"http://{host}:{port}/ask", timeout=10)
    assert (missing.status_code, wrong_method.status_code) == (404, 405)
    assert missing.json() == {"error": "Not Found", "type": "HTTPException"}
    assert wrong_method.json()["type"] == "HTTPException"
