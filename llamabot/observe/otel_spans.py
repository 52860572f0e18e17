"""How an OTel span is made from one of ours, the two ways :class:`~llamabot.observe.otel.OTelHook` has (see its
docstring): :class:`_Live`, a live SDK span started and ended through the public tracing API, and
:class:`_DirectRun`, one root run's record on the direct way, which hands each finished span to the SDK's
processors as a ``ReadableSpan``. Times: our ``perf_counter`` clock shifted to wall-clock once per root span.
"""

from __future__ import annotations

import time
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from llamabot.observe.tracing import Span

if TYPE_CHECKING:
    from llamabot.observe.otel import OTelHook

UNSET = Status(StatusCode.UNSET)


def _clock_offset() -> int:
    """Nanoseconds to add to a ``perf_counter`` time (our spans' clock) to make it wall-clock time."""
    return time.time_ns() - round(time.perf_counter() * 1e9)


def _start_ns(span: Span, offset: int) -> int:
    return offset + round(span.start * 1e9)


def _end_ns(span: Span, offset: int) -> int:
    return offset + round((span.end if span.end is not None else time.perf_counter()) * 1e9)


class _Live:
    """The live OTel span of one of our spans, the clock offset of its tree, and (made once, when a child asks)
    the context that makes children of it."""

    __slots__ = ("span", "offset", "_context")

    def __init__(self, span: Any, offset: int):
        self.span, self.offset, self._context = span, offset, None

    @classmethod
    def root(cls, hook: OTelHook, span: Span) -> _Live:
        return cls.start(hook, span, None, _clock_offset())

    @classmethod
    def start(cls, hook: OTelHook, span: Span, context: Any, offset: int) -> _Live:
        name, kind, attributes = hook._describe(span)
        return cls(
            hook.tracer.start_span(name, context, kind, attributes, start_time=_start_ns(span, offset)),
            offset,
        )

    def child(self, hook: OTelHook, span: Span) -> _Live:
        if self._context is None:
            self._context = otel_trace.set_span_in_context(self.span)
        return _Live.start(hook, span, self._context, self.offset)

    def end(self, hook: OTelHook, span: Span) -> None:
        exported = self.span
        if exported.is_recording():
            attributes = hook._finish(span, {})
            if attributes:
                exported.set_attributes(attributes)
            if span.error is not None:
                error_type, status = hook._failure(span.error)
                exported.set_attribute(ERROR_TYPE, error_type)
                exported.set_status(status)
        exported.end(end_time=_end_ns(span, self.offset))


class _DirectRun:
    """One root run on the direct way, the record of each of its spans: the SDK tracer's processors (as they were
    when the run started), which get the finished spans, and its resource; the OTel span context of each span that
    has one so far (drawn when a span or its first child ends); the root's OTel parent (the application's span, or
    ``None``) and the clock offset. ``contexts`` is ``None`` when the run is not exported (sampled out, or no
    processor)."""

    __slots__ = (
        "root_id",
        "app_parent",
        "contexts",
        "offset",
        "sampled_attributes",
        "trace_id",
        "flags",
        "trace_state",
        "new_span_id",
        "processors",
        "resource",
    )

    @classmethod
    def start(cls, hook: OTelHook, span: Span, tracer: Any, processors: tuple[Any, ...]) -> _DirectRun:
        run = cls()
        run.root_id, run.processors, run.resource = span.span_id, processors, tracer.resource
        run.contexts = None
        if not processors:  # nowhere to send spans
            return run
        ids = tracer.id_generator
        run.new_span_id = ids.generate_span_id
        parent = otel_trace.get_current_span().get_span_context()
        if parent.is_valid:
            trace_id, random_id = parent.trace_id, parent.trace_flags.random_trace_id
        else:
            parent, trace_id, random_id = None, ids.generate_trace_id(), ids.is_trace_id_random()
        name, kind, attributes = hook._describe(span)
        sampling = tracer.sampler.should_sample(None, trace_id, name, kind, attributes, ())
        if not sampling.decision.is_recording():
            return run
        flags = TraceFlags.SAMPLED if sampling.decision.is_sampled() else TraceFlags.DEFAULT
        if random_id:
            flags |= TraceFlags.RANDOM_TRACE_ID
        run.trace_id, run.flags, run.trace_state = trace_id, TraceFlags(flags), sampling.trace_state
        run.app_parent, run.contexts, run.offset = parent, {}, _clock_offset()
        run.sampled_attributes = sampling.attributes  # the root's attributes as the sampler returned them
        return run

    def _context(self, span_id: int) -> Any:
        """The OTel span context of our span ``span_id`` (drawn now if it has none yet)."""
        contexts = self.contexts
        context = contexts.get(span_id)
        if context is None:
            context = contexts.setdefault(
                span_id, SpanContext(self.trace_id, self.new_span_id(), False, self.flags, self.trace_state)
            )
        return context

    def end(self, hook: OTelHook, span: Span) -> None:
        contexts = self.contexts
        if contexts is None:  # the run was not sampled: nor are its spans
            return
        name, kind, attributes = hook._describe(span)
        if span.span_id == self.root_id:
            parent = self.app_parent
            attributes = {**self.sampled_attributes, **attributes}
        else:
            parent = self._context(span.parent_id)
        hook._finish(span, attributes)
        status = UNSET
        if span.error is not None:
            attributes[ERROR_TYPE], status = hook._failure(span.error)
        offset = self.offset
        finished = ReadableSpan(
            name,
            self._context(span.span_id),
            parent,
            self.resource,
            MappingProxyType(attributes),
            (),
            (),
            kind,
            None,
            status,
            _start_ns(span, offset),
            _end_ns(span, offset),
            hook._scope,
        )
        for processor in self.processors:
            processor.on_end(finished)
