"""A tiny OTLP/HTTP trace receiver on loopback: it decodes every ``POST /v1/traces`` body (protobuf, optionally
gzip) with opentelemetry-proto's ``ExportTraceServiceRequest`` and keeps the spans."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def attribute_value(value: Any) -> Any:
    """A decoded ``AnyValue`` as a Python value."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [attribute_value(v) for v in value.array_value.values]
    return getattr(value, which) if which else None


class OTLPReceiver:
    """``with OTLPReceiver() as receiver:`` listens on ``receiver.endpoint``; ``receiver.spans`` are the decoded
    spans, each a dict with ``name``, ``trace_id``, ``span_id``, ``parent_span_id`` (hex), ``kind``, times,
    ``status`` and ``attributes``; ``receiver.resources`` the resource attributes of each request."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.got = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server interface
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.received(self.path, body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def received(self, path: str, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.paths.append(path)
        for resource_spans in request.resource_spans:
            self.resources.append(
                {a.key: attribute_value(a.value) for a in resource_spans.resource.attributes}
            )
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        {
                            "name": span.name,
                            "scope": scope_spans.scope.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "kind": span.kind,
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "status": span.status.code,
                            "attributes": {a.key: attribute_value(a.value) for a in span.attributes},
                        }
                    )
        self.got.set()

    def __enter__(self) -> OTLPReceiver:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
