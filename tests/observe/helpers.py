"""An OpenTelemetry SDK provider that keeps finished spans in memory, and ways to read them as a tree."""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Exported:
    """A tracer provider exporting to memory (``provider``) and what it exported (``spans``)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r} in {[s.name for s in self.spans]}"
        return found[0]

    def clear(self) -> None:
        self.exporter.clear()


def parent_of(span: ReadableSpan, spans: Iterable[ReadableSpan]) -> ReadableSpan | None:
    """The exported span that is ``span``'s parent (``None`` for a root)."""
    if span.parent is None:
        return None
    found = [s for s in spans if s.context.span_id == span.parent.span_id]
    assert len(found) == 1, f"the parent of {span.name!r} was not exported"
    return found[0]


def ops(spans: Iterable[ReadableSpan]) -> list[str]:
    """Each span's ``gen_ai.operation.name`` (or its name, for our own steps), in start order."""
    ordered = sorted(spans, key=lambda s: s.start_time)
    return [s.attributes.get("gen_ai.operation.name", s.name) for s in ordered]
