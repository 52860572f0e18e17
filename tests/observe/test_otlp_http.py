"""A real OTLP/HTTP export: the SDK's ``OTLPSpanExporter`` sends a run's spans to a receiver this test starts on
loopback, which decodes the protobuf bodies (OBS-OTEL-010, OBS-OTEL-020, OBS-OTEL-080)."""

from __future__ import annotations

import time

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status as ProtoStatus
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from llamabot import AgentBot, ScriptedModel
from llamabot.models.scripted import tool_call
from llamabot.observe import otel
from llamabot.observe.otel import OTelHook
from llamabot.toolkits.calculator import add, divide

from .receiver import OTLPReceiver

SCRIPT = [
    tool_call("add", a=2, b=3),
    tool_call("divide", a=1, b=0),
    tool_call("respond_to_user", response="5"),
]


def test_obs_otel_010_a_run_arrives_at_an_otlp_http_endpoint_as_one_decoded_span_tree():
    with OTLPReceiver() as receiver:
        provider = TracerProvider(resource=Resource.create({"service.name": "otel-test"}))
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"))
        )
        bot = AgentBot(
            tools=[add, divide], model=ScriptedModel(list(SCRIPT)), hooks=[OTelHook(provider)]
        )
        before = time.time_ns()
        assert bot("2+3 then 1/0") == "5"
        provider.shutdown()  # flushes the batch
    assert set(receiver.paths) == {"/v1/traces"} and receiver.resources[0]["service.name"] == "otel-test"
    spans = receiver.spans
    assert len(spans) == len(bot.last_trace.spans) == 10
    by_id = {s["span_id"]: s for s in spans}
    root = next(s for s in spans if not s["parent_span_id"])
    assert root["name"] == "invoke_agent AgentBot" and root["scope"] == "llamabot"
    assert root["attributes"]["llamabot.trace_id"] == bot.last_trace.trace_id
    assert {s["trace_id"] for s in spans} == {root["trace_id"]}
    for span in spans:
        assert before <= span["start"] <= span["end"] <= time.time_ns()
        if span is not root:
            parent = by_id[span["parent_span_id"]]
            expected = "decision" if span["name"].startswith("chat") else "invoke_agent AgentBot"
            assert parent["name"] == expected, span["name"]
    chats = [s for s in spans if s["name"] == "chat scripted"]
    assert len(chats) == 3 and all(c["kind"] == ProtoSpan.SPAN_KIND_CLIENT for c in chats)
    assert all(c["attributes"]["gen_ai.usage.input_tokens"] > 0 for c in chats)  # ints survive the wire
    tools = {s["attributes"]["gen_ai.tool.name"]: s for s in spans if s["name"].startswith("execute_tool")}
    first_call = bot.last_trace.of_kind("model_call")[0].attributes["reply"].tool_calls[0]
    assert tools["add"]["attributes"]["gen_ai.tool.call.id"] == first_call.id
    assert tools["divide"]["status"] == ProtoStatus.STATUS_CODE_ERROR
    assert tools["divide"]["attributes"]["error.type"] == "ZeroDivisionError"
    decision = next(s for s in spans if s["name"] == "decision")
    assert decision["attributes"]["llamabot.calls"] == ["add"]


def test_obs_otel_080_instrument_reads_the_standard_otlp_endpoint_variable(monkeypatch):
    with OTLPReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
        hook = otel.instrument()
        try:
            assert hook.owned_provider is not None
            bot = AgentBot(
                tools=[add], model=ScriptedModel([tool_call("respond_to_user", response="ok")])
            )
            assert bot("hi") == "ok"
        finally:
            otel.uninstrument()  # shuts the provider it made down, which flushes the batch
    assert receiver.resources[0]["service.name"] == "from-env"
    assert sorted(s["name"] for s in receiver.spans) == [
        "chat scripted",
        "decision",
        "execute_tool respond_to_user",
        "invoke_agent AgentBot",
    ]
