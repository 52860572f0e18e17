"""OpenTelemetry export: every span of a run becomes an OTel span, named and tagged by the GenAI conventions.

``pip install "llamabot[otel]"``. Nothing here is imported by the rest of llamabot: export is one more lifecycle
hook (:class:`OTelHook`), on for one bot (``AgentBot(..., hooks=[OTelHook()])``) or for every run of the process
(:func:`instrument`). When it is off, no run pays anything for it.

How our spans map (the OpenTelemetry GenAI semantic conventions, ``gen_ai.*``):

========================  =====================================  ==========================================
our span                  OTel span (kind)                       attributes
========================  =====================================  ==========================================
``run`` (a bot call)      ``invoke_agent {bot}`` (INTERNAL)      ``gen_ai.agent.name``, ``llamabot.trace_id``
``model_call``            ``chat {model}`` (CLIENT)              ``gen_ai.request.model``, ``gen_ai.usage.*``...
``tool_call`` (a tool,    ``execute_tool {tool}`` (INTERNAL)     ``gen_ai.tool.name``, ``gen_ai.tool.call.id``
an AoT atom)
``node`` (a decision, a   ``{span name}`` (INTERNAL)             ``llamabot.span.kind``, the step's numbers
phase, a ToT step...)
========================  =====================================  ==========================================

Every span has ``gen_ai.operation.name`` (``invoke_agent``, ``chat``, ``execute_tool``) or ``llamabot.span.kind``
(our ``Span.kind``: ``decision``, ``phase``, ``tot_step``...; also on AoT atoms); run spans carry our
``trace_id`` as ``llamabot.trace_id`` (the OTel trace groups the rest; each attribute costs the SDK about
3.5 µs, so none is repeated on every span). Times are
wall-clock (our ``perf_counter`` times shifted once per root span, so durations are exactly ours). Parents follow
our span tree through explicit contexts, so concurrent runs never mix; a root run becomes a child of the OTel
span active where it started (an instrumented web request, say). Message contents (prompts, replies, tool
arguments and results, the run's query and answer, error texts) are recorded only with ``capture_content=True``
(or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace import Tracer as SDKTracer
    from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    # the GenAI attribute names are in development: the conventions package keeps them under _incubating
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider
except ImportError as exc:
    raise ImportError(
        f'OpenTelemetry export needs the otel extra: pip install "llamabot[otel]" ({exc})'
    ) from exc

from llamabot.observe.hooks import RunHooks
from llamabot.observe.otel_messages import _json, _text_message, chat_message, reply_message
from llamabot.observe.otel_spans import _DirectRun, _Live
from llamabot.observe.tracing import Span, current_trace, process_hooks, set_process_hooks

#: The standard switch of GenAI instrumentations for recording message contents.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Our own attributes.
TRACE_ID = "llamabot.trace_id"
SPAN_KIND = "llamabot.span.kind"
USAGE_COST = "llamabot.usage.cost"
#: String attributes of node spans that are names, not contents (recorded even without ``capture_content``).
NAME_ATTRIBUTES = frozenset({"action", "calls", "atom_kind", "status"})
#: Model request parameters and their GenAI attribute names.
INPUT_TOKENS, OUTPUT_TOKENS = gen_ai.GEN_AI_USAGE_INPUT_TOKENS, gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
REQUEST_PARAMS = {
    "temperature": gen_ai.GEN_AI_REQUEST_TEMPERATURE,
    "max_tokens": gen_ai.GEN_AI_REQUEST_MAX_TOKENS,
    "top_p": gen_ai.GEN_AI_REQUEST_TOP_P,
    "top_k": gen_ai.GEN_AI_REQUEST_TOP_K,
    "seed": gen_ai.GEN_AI_REQUEST_SEED,
    "frequency_penalty": gen_ai.GEN_AI_REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": gen_ai.GEN_AI_REQUEST_PRESENCE_PENALTY,
    "stop": gen_ai.GEN_AI_REQUEST_STOP_SEQUENCES,
}
_TRUE = ("1", "true", "yes", "on")
#: The direct way (see OTelHook) hands finished spans to these processors only: their on_start does nothing.
DIRECT_PROCESSORS = (SimpleSpanProcessor, BatchSpanProcessor)
#: ... and only under span limits that our spans cannot reach without contents (at most this many attributes,
#: names and ids of at most this many characters).
DIRECT_MAX_ATTRIBUTES, DIRECT_MAX_LENGTH = 32, 256


class OTelHook(RunHooks):
    """Export every span of the runs it observes as OpenTelemetry spans (see the module docstring).

    Two ways to the exporter, the same spans either way:

    - **direct** (the default whenever it is exact): with the SDK's tracer provider, its ``ParentBased`` sampler
      (the SDK default), only the SDK's ``SimpleSpanProcessor``/``BatchSpanProcessor`` (whose ``on_start`` does
      nothing) and contents off, each of our spans is handed to the processors as a finished ``ReadableSpan``
      when it ends. The sampler decides once per root run (the run's spans follow it, as ``ParentBased`` makes
      them); span ids come from the provider's id generator. About a fifth of the cost of a live SDK span, whose
      attribute checks we do not need (our attributes are typed by construction).
    - **live**: any other provider, processor or sampler, or ``capture_content``: a live span is started when
      our span starts and ended when it ends, through the public tracing API (span limits applied by the SDK).

    Args:
        tracer_provider: where spans go; default: the global one (``opentelemetry.trace.get_tracer_provider()``,
            a no-op until the application sets an SDK provider).
        capture_content: record message contents; default: ``$OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``,
            else off.
        direct: ``False``: always the live way (the public tracing API only). Why the direct way exists: it costs
            a traced agent step well under half of what the live way costs (``otel_live_ratio`` against
            ``otel_ratio`` in ``benchmarks/agent_overhead.py``), at the price of reading three SDK attributes
            (``Tracer._is_enabled``, ``Tracer._span_limits``, the provider's ``_span_processors``) to know it is
            exact; if they are missing, runs take the live way.
    """

    def __init__(self, tracer_provider: TracerProvider | None = None, *, capture_content: bool | None = None,
                 direct: bool = True):
        provider = tracer_provider if tracer_provider is not None else otel_trace.get_tracer_provider()
        self.tracer = provider.get_tracer("llamabot", _llamabot_version())
        self.capture_content = capture_from_env() if capture_content is None else bool(capture_content)
        self.direct = bool(direct)
        self._key = f"_otel_{id(self):x}"  # where this hook keeps the OTel record of each of our spans
        # the record of each run going the direct way, by trace id, from its root's start to its end: every span of
        # such a run shares it, so a starting span finds it here without looking up its parent
        self._direct_runs: dict[str, _DirectRun] = {}
        self._scope = InstrumentationScope("llamabot", _llamabot_version())
        self._global: tuple[Any, Any] = (None, None)  # (global provider, its tracer) behind a proxy tracer
        # a provider that instrument() made from the environment, for uninstrument() to shut down
        self.owned_provider: Any = None

    # -- the hook -----------------------------------------------------------------------------------------

    def on_start(self, span: Span, state: Any) -> None:
        if span.parent_id is not None:
            record: _Live | _DirectRun | None = self._direct_runs.get(span.trace_id)
            if record is not None:  # a span of a run going the direct way: the run's record is every span's
                span.attributes[self._key] = record
                return
        parent = self._parent(span)
        if parent is None:  # a root: a child of the OTel span active here (if any); our clock mapped once
            direct = self._direct_tracer()
            if direct is not None:
                record = _DirectRun.start(self, span, *direct)
                self._direct_runs.setdefault(span.trace_id, record)  # (a trace given to a second root keeps its first)
            else:
                record = _Live.root(self, span)
        elif parent.__class__ is _DirectRun:  # the run's record is every span's: ids are drawn when spans end
            record = parent
        else:
            record = parent.child(self, span)
        span.attributes[self._key] = record

    def on_end(self, span: Span, state: Any) -> None:
        record: _Live | _DirectRun | None = span.attributes.pop(self._key, None)
        if record is not None:  # None: started before this hook was told (nothing to end)
            record.end(self, span)
            if span.parent_id is None and self._direct_runs.get(span.trace_id) is record:  # its root ended
                del self._direct_runs[span.trace_id]

    def _parent(self, span: Span) -> _Live | _DirectRun | None:
        if span.parent_id is None:
            return None
        trace = current_trace()
        if trace is None:
            return None
        spans = trace.spans
        parent = spans[span.parent_id] if span.parent_id < len(spans) else None
        if parent is None or parent.span_id != span.parent_id:
            return None
        return parent.attributes.get(self._key)

    def _direct_tracer(self) -> tuple[Any, tuple[Any, ...]] | None:
        """(the SDK tracer, its span processors) when the direct way is exact for a new root run (see the class
        docstring), else None."""
        if self.capture_content or not self.direct:
            return None
        tracer = self.tracer
        if isinstance(tracer, otel_trace.ProxyTracer):  # spans go to whatever provider is global now
            provider = otel_trace.get_tracer_provider()
            if not isinstance(provider, SDKTracerProvider):
                return None
            if self._global[0] is not provider:
                self._global = (provider, provider.get_tracer("llamabot", _llamabot_version()))
            tracer = self._global[1]
        if not isinstance(tracer, SDKTracer) or not isinstance(tracer.sampler, ParentBased):
            return None
        enabled, limits = getattr(tracer, "_is_enabled", None), getattr(tracer, "_span_limits", None)
        if enabled is None or limits is None or not enabled():  # unknown SDK, or llamabot turned off: the live way
            return None
        count, length = limits.max_span_attributes, limits.max_span_attribute_length
        if (count is not None and count < DIRECT_MAX_ATTRIBUTES) or (
            length is not None and length < DIRECT_MAX_LENGTH
        ):
            return None
        processors = getattr(tracer.span_processor, "_span_processors", None)
        if processors is None or any(type(p) not in DIRECT_PROCESSORS for p in processors):
            return None
        return tracer, processors

    # -- what a span becomes ------------------------------------------------------------------------------

    def _describe(self, span: Span) -> tuple[str, SpanKind, dict[str, Any]]:
        """The OTel span's name, kind and the attributes known when our span starts."""
        category = span.category
        attributes: dict[str, Any] = {}
        if category == "model_call":
            return self._model_call_start(span, attributes), SpanKind.CLIENT, attributes
        if category == "tool_call":
            return self._tool_call_start(span, attributes), SpanKind.INTERNAL, attributes
        if category == "run":
            return self._run_start(span, attributes), SpanKind.INTERNAL, attributes
        attributes[SPAN_KIND] = span.kind
        return span.name, SpanKind.INTERNAL, attributes

    def _finish(self, span: Span, attributes: dict[str, Any]) -> dict[str, Any]:
        """Add the attributes known when our span ends (usage, results, a step's numbers) to ``attributes``."""
        category = span.category
        own = span.attributes
        if category == "model_call":
            self._model_call_end(span, attributes)
        elif category == "tool_call":
            if self.capture_content and "result" in own:
                attributes[gen_ai.GEN_AI_TOOL_CALL_RESULT] = _json(own["result"])
        elif category == "run":
            if self.capture_content and "result" in own:
                attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES] = _json([_text_message("assistant", own["result"])])
        else:
            self._step_attributes(own, attributes)
        return attributes

    def _failure(self, error: str) -> tuple[str, Status]:
        """(``error.type``, the span's status) of a span that failed with ``error``."""
        kind, colon, _ = error.partition(":")
        error_type = kind if colon and kind.isidentifier() else "_OTHER"
        return error_type, Status(StatusCode.ERROR, error if self.capture_content else error_type)

    def _run_start(self, span: Span, attributes: dict[str, Any]) -> str:
        attributes[gen_ai.GEN_AI_OPERATION_NAME] = "invoke_agent"
        attributes[TRACE_ID] = span.trace_id
        attributes[gen_ai.GEN_AI_AGENT_NAME] = span.name
        if self.capture_content and "query" in span.attributes:
            attributes[gen_ai.GEN_AI_INPUT_MESSAGES] = _json(
                [_text_message("user", span.attributes["query"])]
            )
        return f"invoke_agent {span.name}"

    def _model_call_start(self, span: Span, attributes: dict[str, Any]) -> str:
        request = span.attributes.get("request")
        model = getattr(request, "model", None) or str(span.attributes.get("model", ""))
        attributes[gen_ai.GEN_AI_OPERATION_NAME] = "chat"
        attributes[gen_ai.GEN_AI_REQUEST_MODEL] = model
        provider, slash, _ = model.partition("/")
        if slash:
            attributes[gen_ai.GEN_AI_PROVIDER_NAME] = provider
        if request is not None:
            for key, value in request.params.items():
                name = REQUEST_PARAMS.get(key)
                if name is not None and value is not None:
                    attributes[name] = _attribute_value(value)
            if request.response_format:
                attributes[gen_ai.GEN_AI_OUTPUT_TYPE] = "json"
            if self.capture_content:
                attributes[gen_ai.GEN_AI_INPUT_MESSAGES] = _json([chat_message(m) for m in request.messages])
        return f"chat {model}"

    def _model_call_end(self, span: Span, attributes: dict[str, Any]) -> None:
        reply = span.attributes.get("reply")
        if reply is None:
            return
        usage = reply.usage
        attributes[INPUT_TOKENS] = usage.prompt_tokens
        attributes[OUTPUT_TOKENS] = usage.completion_tokens
        if usage.cost is not None:
            attributes[USAGE_COST] = usage.cost
        if reply.model:
            attributes[gen_ai.GEN_AI_RESPONSE_MODEL] = reply.model
        if reply.finish_reason:
            attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = (reply.finish_reason,)
        if self.capture_content:
            attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES] = _json([reply_message(reply)])

    def _tool_call_start(self, span: Span, attributes: dict[str, Any]) -> str:
        own = span.attributes
        tool = span.name.rpartition(":")[2]  # an AoT atom's span is "<atom id>:<tool>"
        attributes[gen_ai.GEN_AI_OPERATION_NAME] = "execute_tool"
        attributes[gen_ai.GEN_AI_TOOL_NAME] = tool
        attributes[gen_ai.GEN_AI_TOOL_TYPE] = "function"
        if span.kind != "tool_call":  # an AoT atom or compensation
            attributes[SPAN_KIND] = span.kind
        call_id = own.get("call_id", own.get("atom"))
        if call_id is not None:
            attributes[gen_ai.GEN_AI_TOOL_CALL_ID] = str(call_id)
        if "atom" in own:
            attributes["llamabot.atom.id"] = str(own["atom"])
        if self.capture_content and "arguments" in own:
            attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = _json(own["arguments"])
        return f"execute_tool {tool}"

    def _step_attributes(self, own: dict[str, Any], out: dict[str, Any]) -> None:
        """A node step's own attributes as ``llamabot.<name>`` into ``out``: numbers and flags always, names (the
        edge taken, the tools chosen) always, other text only with ``capture_content``."""
        content = self.capture_content
        for key, value in own.items():
            if key[0] == "_":
                continue
            if isinstance(value, (bool, int, float)) or (
                (content or key in NAME_ATTRIBUTES) and isinstance(value, str)
            ):
                out[_step_key(key)] = value
            elif key in NAME_ATTRIBUTES and isinstance(value, (list, tuple)):
                out[_step_key(key)] = tuple(map(str, value))
            elif content and value is not None:
                out[_step_key(key)] = _json(value)


_STEP_KEYS: dict[str, str] = {}


def _step_key(key: str) -> str:
    """``llamabot.<key>``, made once per key."""
    name = _STEP_KEYS.get(key)
    if name is None:
        name = _STEP_KEYS.setdefault(key, f"llamabot.{key}")
    return name


def _attribute_value(value: Any) -> Any:
    """A request parameter as an attribute value OpenTelemetry accepts (the direct way does not check them)."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return str(value)


# -- the process-wide switch -------------------------------------------------------------------------------


def instrument(
    tracer_provider: TracerProvider | None = None, *, capture_content: bool | None = None
) -> OTelHook:
    """Export every run of this process (every root run started from now on) to OpenTelemetry.

    Replaces an earlier :func:`instrument` (one exporter at a time). With no ``tracer_provider`` and no SDK
    provider set globally, ``$OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) makes one that sends
    OTLP/HTTP there in batches (service name from ``$OTEL_SERVICE_NAME``); otherwise spans go to the global
    provider. Nothing is enabled at import: only this call turns export on. Returns the installed hook.
    """
    provider = tracer_provider if tracer_provider is not None else provider_from_env()
    hook = OTelHook(provider, capture_content=capture_content)
    hook.owned_provider = provider if tracer_provider is None and provider is not None else None
    set_process_hooks((*_others(process_hooks()), hook))
    return hook


def uninstrument() -> None:
    """Stop exporting new runs (runs in flight finish their export); a provider :func:`instrument` made from
    the environment is flushed and shut down."""
    previous = set_process_hooks(_others(process_hooks()))
    for hook in previous:
        owned = getattr(hook, "owned_provider", None) if isinstance(hook, OTelHook) else None
        if owned is not None:
            owned.shutdown()


def provider_from_env() -> TracerProvider | None:
    """An SDK provider exporting OTLP/HTTP in batches when ``$OTEL_EXPORTER_OTLP_ENDPOINT`` or
    ``$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set and no SDK provider is set globally; else ``None`` (use the
    global provider)."""
    if not isinstance(
        otel_trace.get_tracer_provider(), (otel_trace.ProxyTracerProvider, otel_trace.NoOpTracerProvider)
    ):
        return None
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    ):
        return None
    return otlp_provider()


def otlp_provider(endpoint: str | None = None) -> SDKTracerProvider:
    """An SDK provider that sends spans over OTLP/HTTP in batches to ``endpoint``, a collector's base URL
    (``http://localhost:4318``; ``/v1/traces`` is added unless given), or by default where the ``OTEL_EXPORTER_OTLP_*``
    variables say. The service name comes from ``$OTEL_SERVICE_NAME`` (the SDK's default otherwise)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource

    if endpoint is not None:
        endpoint = endpoint.rstrip("/")
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"OTLP endpoint {endpoint!r}: give an http(s):// URL, e.g. http://localhost:4318")
        if not endpoint.endswith("/v1/traces"):
            endpoint += "/v1/traces"
    provider = SDKTracerProvider(resource=Resource.create())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def export_to(endpoint: str, *, capture_content: bool | None = None) -> OTelHook:
    """:func:`instrument` with a provider of its own that sends every run to the OTLP/HTTP ``endpoint`` (see
    :func:`otlp_provider`); :func:`uninstrument` flushes and shuts it down. What ``llamabot --otel URL`` uses."""
    provider = otlp_provider(endpoint)
    hook = instrument(provider, capture_content=capture_content)
    hook.owned_provider = provider
    return hook


def capture_from_env() -> bool:
    """Whether ``$OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for message contents."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _TRUE


def _others(hooks: Iterable[RunHooks]) -> tuple[RunHooks, ...]:
    return tuple(h for h in hooks if not isinstance(h, OTelHook))


def _llamabot_version() -> str:
    try:
        return version("llamabot")
    except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
        return "0"
