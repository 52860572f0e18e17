"""The direct way to the exporter (OBS-OTEL-120..140): with the SDK's own processors and sampler, finished spans
go straight to the processors; any other set-up takes the live way. Both export the same spans."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace import Tracer as SDKTracer
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased, TraceIdRatioBased
from opentelemetry.trace import StatusCode

from llamabot import AgentBot, ScriptedModel
from llamabot.models.scripted import tool_call
from llamabot.observe.otel import OTelHook
from llamabot.toolkits.calculator import divide, multiply

from .helpers import Exported

SCRIPT = [
    tool_call("multiply", a=6, b=7),
    tool_call("divide", a=1, b=0),
    tool_call("respond_to_user", response="42"),
]


class Forwarding(SpanProcessor):
    """A processor of the application's own (not one of the SDK's two): the hook must take the live way."""

    def __init__(self, exporter: InMemorySpanExporter):
        self.exporter, self.started = exporter, 0

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.started += 1

    def on_end(self, span: ReadableSpan) -> None:
        self.exporter.export((span,))


def run(hook: OTelHook) -> None:
    bot = AgentBot(tools=[multiply, divide], model=ScriptedModel(list(SCRIPT)), hooks=[hook])
    assert bot("6*7 then 1/0") == "42"


def shape(spans: list[ReadableSpan]) -> list[tuple]:
    """Everything of the exported spans but ids and times: name, kind, parent's name, attributes, status."""
    by_id = {s.context.span_id: s for s in spans}
    return [
        (
            s.name,
            s.kind,
            by_id[s.parent.span_id].name if s.parent is not None else None,
            {k: v for k, v in s.attributes.items() if k != "llamabot.trace_id"},  # our trace id: one per run
            s.status.status_code,
            s.instrumentation_scope.name,
            s.context.trace_flags.sampled,
        )
        for s in sorted(spans, key=lambda s: s.start_time)
    ]


def test_obs_otel_120_the_sdk_s_own_set_up_takes_the_direct_way_and_exports_what_the_live_way_does():
    direct = Exported()
    hook = OTelHook(direct.provider)
    assert hook._direct_tracer() is not None
    run(hook)

    live_exporter = InMemorySpanExporter()
    provider = TracerProvider()
    forwarding = Forwarding(live_exporter)
    provider.add_span_processor(forwarding)
    live = OTelHook(provider)
    assert live._direct_tracer() is None
    run(live)

    assert forwarding.started == 10  # the live way started every span through the processor
    live_spans = list(live_exporter.get_finished_spans())
    assert shape(direct.spans) == shape(live_spans)
    assert len([s for s in direct.spans if "llamabot.trace_id" in s.attributes]) == 1
    failed = [s for s in direct.spans if s.status.status_code == StatusCode.ERROR]
    assert [s.name for s in failed] == ["execute_tool divide"]
    assert failed[0].attributes["error.type"] == "ZeroDivisionError"
    for span in direct.spans:  # timed like the live way: wall-clock nanoseconds, start before end
        assert span.start_time <= span.end_time and span.start_time > 1_600_000_000 * 10**9


def test_obs_otel_125_spans_of_a_direct_run_find_its_record_by_trace_id_until_its_root_ends():
    """Each span of a run on the direct way finds the run's record in the hook's map (by trace id) while the run
    lasts, including the spans of a bot called inside a tool (same trace); the root's end removes the entry."""
    from llamabot.tools import tool

    direct = Exported()
    hook = OTelHook(direct.provider)
    seen: list[int] = []

    @tool
    def nested(question: str) -> str:
        """Ask an inner agent."""
        seen.append(len(hook._direct_runs))
        inner = AgentBot(tools=[multiply], model=ScriptedModel([tool_call("respond_to_user", response="in")]))
        return inner(question)

    bot = AgentBot(tools=[nested], hooks=[hook], model=ScriptedModel([
        tool_call("nested", question="q"), tool_call("respond_to_user", response="out")]))
    assert bot("go") == "out"
    assert seen == [1] and hook._direct_runs == {}  # one run's entry while it ran, none after
    spans = direct.spans
    assert len({s.context.trace_id for s in spans}) == 1 and len(spans) == 7 + 4  # outer run, inner run
    by_id = {s.context.span_id: s for s in spans}
    inner_run = next(s for s in spans if s.name == "invoke_agent AgentBot" and s.parent is not None)
    assert by_id[inner_run.parent.span_id].name == "execute_tool nested"  # the inner run nests in the tool call


def test_obs_otel_120_a_batch_processor_takes_the_direct_way_too():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    hook = OTelHook(provider)
    assert hook._direct_tracer() is not None
    run(hook)
    provider.force_flush()
    spans = exporter.get_finished_spans()
    assert len(spans) == 10 and len({s.context.trace_id for s in spans}) == 1
    provider.shutdown()


def test_obs_otel_130_the_sampler_decides_per_run_and_every_span_of_a_run_follows():
    run(OTelHook(TracerProvider()))  # an SDK provider with no processor yet: nothing to send, nothing fails

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(ALWAYS_OFF))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hook = OTelHook(provider)
    assert hook._direct_tracer() is not None
    run(hook)
    assert exporter.get_finished_spans() == ()

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.5)))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hook = OTelHook(provider)
    for _ in range(24):
        run(hook)
    per_trace: dict[int, int] = {}
    for span in exporter.get_finished_spans():
        per_trace[span.context.trace_id] = per_trace.get(span.context.trace_id, 0) + 1
    assert set(per_trace.values()) == {10}  # whole runs, never a part of one
    assert 0 < len(per_trace) < 24  # some runs kept, some dropped (odds of failing: 2 in 16 million)


def test_obs_otel_140_other_samplers_small_span_limits_contents_and_direct_false_take_the_live_way():
    for provider, options in [
        (TracerProvider(sampler=ALWAYS_ON), {}),
        (TracerProvider(span_limits=SpanLimits(max_span_attributes=3)), {}),
        (TracerProvider(), {"capture_content": True}),
        (TracerProvider(), {"direct": False}),  # asked for: the public tracing API only
    ]:
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        hook = OTelHook(provider, **options)
        assert hook._direct_tracer() is None
        run(hook)
        spans = exporter.get_finished_spans()
        assert len(spans) == 10
        if provider._span_limits.max_span_attributes == 3:  # the SDK applied the limit
            assert all(len(s.attributes) <= 3 for s in spans)


def test_obs_otel_150_the_sdk_internals_the_direct_way_reads_are_still_there():
    """Names in ``llamabot/observe/otel.py:OTelHook._direct_tracer`` that are not the SDK's public API: if this
    fails after an SDK upgrade, the direct way must be rewritten (or removed: the live way needs none)."""
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=40, max_span_attribute_length=300))
    processor = SimpleSpanProcessor(InMemorySpanExporter())
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("probe")
    assert isinstance(tracer, SDKTracer)
    assert tracer._is_enabled() is True, "opentelemetry-sdk: Tracer._is_enabled() is gone or changed"
    limits = tracer._span_limits
    assert (limits.max_span_attributes, limits.max_span_attribute_length) == (40, 300), (
        "opentelemetry-sdk: Tracer._span_limits (SpanLimits) is gone or changed"
    )
    assert tuple(tracer.span_processor._span_processors) == (processor,), (
        "opentelemetry-sdk: the multi-processor's _span_processors is gone or changed"
    )
    # the two processors the direct way trusts do nothing when a span starts (their on_start returns at once)
    for kind in (SimpleSpanProcessor, BatchSpanProcessor):
        code = kind.on_start.__code__
        assert code.co_names == () and len(code.co_code) <= 8, (
            f"opentelemetry-sdk: {kind.__name__}.on_start now does something; the direct way skips it"
        )
