"""Run events: what a run reports as it goes (for streaming progress from a service), derived from its hooks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from llamabot.observe.answer_stream import AnswerStreams, PartialOutput
from llamabot.observe.hooks import RunHooks, ToolCallDelta

if TYPE_CHECKING:
    from llamabot.observe.tracing import Span

EventKind = Literal["run_started", "node", "decision", "tool_started", "tool_finished", "token", "partial_output",
                    "final_answer", "approval_required", "error"]


@dataclass(slots=True, frozen=True)
class RunEvent:
    """One step of a run. ``data`` depends on ``kind``:

    - ``decision``: ``calls`` (tool names chosen), ``errors`` (invalid calls), ``iteration``;
    - ``node``: ``node`` (its name), ``kind``, ``action`` (the edge it took), ``duration_s`` - every other graph
      node step (an AoT plan, an ANoT phase, a ToT step...);
    - ``tool_started``: ``tool``, ``arguments``;
    - ``tool_finished``: ``tool``, ``result`` or ``error``, ``duration_s``;
    - ``token``: ``delta``, a piece of streamed model output: text the model writes (``answer`` false), or a piece
      of the final answer decoded from the arguments of a terminal tool as the model writes them (``answer``
      true: ``respond_to_user``'s ``response``; see ``GraphBot.answer_arguments``);
    - ``partial_output``: ``output``, a typed answer (``output_type=``) as written so far: the JSON value read from
      the partial arguments (not validated yet; the validated object is the ``final_answer``'s ``result``);
    - ``final_answer``: ``result``, ``usage`` (the run's requests, input/output tokens and cost, a dict);
    - ``approval_required``: ``requests`` (the tool calls waiting for a decision: ``call_id``, ``tool``,
      ``arguments``), ``paused`` (the :class:`~llamabot.agents.approval.PausedRun` as JSON, for ``bot.resume``),
      ``usage``; the run paused (``astream`` then raises ``ApprovalRequired``);
    - ``error``: ``error`` (the run failed with this exception text), ``usage`` (what it spent until then).
    """

    kind: EventKind
    trace_id: str
    data: dict[str, Any] = field(default_factory=dict)


class EventHook(RunHooks):
    """Turn the lifecycle of one run into :class:`RunEvent`s passed to ``sink`` (e.g. a queue's ``put_nowait``).

    Only the steps of the outermost run it sees are reported (a bot called inside a tool runs silently), and
    a failed run reports no ``final_answer`` (the caller reports the error). ``answers`` maps terminal tools to
    the argument holding their answer, whose text is reported piece by piece as ``token`` events.
    """

    __slots__ = ("sink", "depth", "answers")

    def __init__(self, sink: Callable[[RunEvent], None], answers: Mapping[str, str] | None = None):
        self.sink = sink
        self.depth = 0
        self.answers = AnswerStreams(answers) if answers else None

    def for_run(self) -> EventHook:
        return EventHook(self.sink, self.answers.answers if self.answers is not None else None)

    def on_start(self, span: Span, state: Any) -> None:
        category = span.category
        if category == "run":
            self.depth += 1
        elif category == "tool_call" and self.depth == 1:
            self.sink(RunEvent("tool_started", span.trace_id, {"tool": span.name,
                                                               "arguments": span.attributes.get("arguments")}))

    def on_end(self, span: Span, state: Any) -> None:
        if span.category == "run":
            self.depth -= 1
            if self.depth == 0 and span.error is None:
                usage = span.attributes.get("usage")
                self.sink(RunEvent("final_answer", span.trace_id, {
                    "result": span.attributes.get("result"), "usage": usage.to_dict() if usage is not None else None}))
            return
        if self.depth != 1:
            return
        if span.category == "model_call":
            if self.answers is not None:
                for piece in self.answers.finish(span.span_id):
                    self._answer(span, piece)
            return
        attributes = span.attributes
        if span.category == "tool_call":
            data: dict[str, Any] = {"tool": span.name}
            if span.error is not None:
                data["error"] = span.error
            else:
                data["result"] = attributes.get("result")
            data["duration_s"] = span.duration_s
            self.sink(RunEvent("tool_finished", span.trace_id, data))
        elif span.kind == "decision" and span.error is None:
            self.sink(RunEvent("decision", span.trace_id, {"calls": attributes.get("calls", []),
                                                           "errors": attributes.get("errors", []),
                                                           "iteration": attributes.get("iteration")}))
        elif span.category == "node" and span.kind != "decision":
            self.sink(RunEvent("node", span.trace_id, {"node": span.name, "kind": span.kind,
                                                       "action": attributes.get("action"),
                                                       "duration_s": span.duration_s}))

    def on_token(self, span: Span, delta: str) -> None:
        if self.depth == 1:
            self.sink(RunEvent("token", span.trace_id, {"delta": delta, "answer": False}))

    def on_tool_call_delta(self, span: Span, delta: ToolCallDelta) -> None:
        if self.depth == 1 and self.answers is not None:
            self._answer(span, self.answers.feed(span.span_id, delta))

    def _answer(self, span: Span, piece: str | PartialOutput) -> None:
        if type(piece) is PartialOutput:
            self.sink(RunEvent("partial_output", span.trace_id, {"output": piece.value}))
        elif piece:
            self.sink(RunEvent("token", span.trace_id, {"delta": piece, "answer": True}))
