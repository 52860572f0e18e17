"""A real OpenAI-compatible ``/v1/chat/completions`` server on loopback, for testing what LiteLLM does offline.

The model named in a request says how the server behaves (LiteLLM sends ``openai/<name>`` as ``<name>``):

| model | answer |
|---|---|
| ``answers`` | 200: a native call of ``respond_to_user`` (:data:`ANSWER`) when that tool is offered, else :data:`ANSWER` as text; streamed when asked |
| ``rate-limited`` | 429 |
| ``broken`` / ``bad-gateway`` / ``overloaded`` | 500 / 502 / 503 |
| ``bad-request`` / ``unauthorized`` / ``forbidden`` / ``not-found`` / ``unprocessable`` | 400 / 401 / 403 / 404 / 422 |
| ``slow`` | answers after :data:`SLOW_S` seconds (longer than the tests' ``timeout``) |
| ``breaks-mid-stream`` | streams the first word of :data:`ANSWER`, then drops the connection |

``hits`` counts the requests per model (every retry of a client included).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "the fallback answered"
SLOW_S = 3.0
USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
ERRORS = {"rate-limited": 429, "broken": 500, "bad-gateway": 502, "overloaded": 503, "bad-request": 400,
          "unauthorized": 401, "forbidden": 403, "not-found": 404, "unprocessable": 422}


class OpenAIServer(ThreadingHTTPServer):
    """The server (started by :func:`start`); ``url`` is its ``api_base``."""

    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def count(self, model: str) -> None:
        with self.lock:
            self.hits[model] += 1


def start() -> OpenAIServer:
    server = OpenAIServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def closed_port_url() -> str:
    """An ``api_base`` on a loopback port nothing listens on: a connection there is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: OpenAIServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model = body["model"]
        self.server.count(model)
        if model in ERRORS:
            return self._json(ERRORS[model], {"error": {"message": f"{model}: refused by the test server",
                                                        "type": model, "code": ERRORS[model]}})
        if model == "slow":
            time.sleep(SLOW_S)
        call = any(t.get("function", {}).get("name") == "respond_to_user" for t in body.get("tools") or ())
        if body.get("stream"):
            return self._stream(model, call, broken=model == "breaks-mid-stream")
        message: dict[str, Any] = {"role": "assistant", "content": None if call else ANSWER}
        if call:
            message["tool_calls"] = [{"id": "call_1", "type": "function", "function": {
                "name": "respond_to_user", "arguments": json.dumps({"response": ANSWER})}}]
        self._json(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
                         "choices": [{"index": 0, "message": message,
                                      "finish_reason": "tool_calls" if call else "stop"}],
                         "usage": USAGE})

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, model: str, call: bool, broken: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

        def send(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> None:
            chunk: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                                     "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if usage:
                chunk["choices"], chunk["usage"] = [], usage
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()

        words = ANSWER.split(" ")
        if broken:
            send({"role": "assistant", "content": words[0] + " "})
            self.close_connection = True
            self.wfile.write(b"data: {not json")
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if call:
            arguments = json.dumps({"response": ANSWER})
            send({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                       "function": {"name": "respond_to_user", "arguments": ""}}]})
            for start in range(0, len(arguments), 5):
                send({"tool_calls": [{"index": 0, "function": {"arguments": arguments[start:start + 5]}}]})
        else:
            for index, word in enumerate(words):
                send({"role": "assistant", "content": word if index == len(words) - 1 else word + " "})
        send({}, finish="tool_calls" if call else "stop")
        send({}, usage=USAGE)
        self.wfile.write(b"data: [DONE]\n\n")
