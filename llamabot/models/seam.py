"""The model seam: the one place every bot calls a model through.

A *chat model* (:class:`~llamabot.models.base.ChatModel`) is anything with ``complete(request, on_token=None)``
and an async ``acomplete`` twin that return a :class:`ModelReply`; :func:`llamabot.models.resolve.get_model`
says which one a bot talks to.

``call_model`` / ``acall_model`` wrap a call in a ``model_call`` span (tokens, cost, latency, the reply), so a
recorded trace can be replayed later, add its usage to the run's and enforce the run's usage limits. Both share
``_begin``/``_end``; only the call itself differs.
"""

from __future__ import annotations

from llamabot.models.base import ChatModel, TokenCallback
from llamabot.models.reply import Fallback, ModelReply, ModelRequest
from llamabot.observe.hooks import ToolCallDelta
from llamabot.observe.tracing import (
    OpenSpan,
    close_span,
    emit_token,
    emit_tool_call_delta,
    start_span,
)


def _streaming(on_token: TokenCallback | None, opened: OpenSpan | None) -> TokenCallback | None:
    """The callback a model streams into: the caller's ``on_token`` (text only), and the run's hooks when any of
    them listens (text to ``on_token``, pieces of tool calls to ``on_tool_call_delta``). ``opened``: the model
    call's span (its run context says whether hooks listen; ``None`` outside a run)."""
    if opened is None or not opened[2].tokens:
        if on_token is None:
            return None
        return lambda piece: on_token(piece) if type(piece) is str else None

    def both(piece: str | ToolCallDelta) -> None:
        if type(piece) is str:
            if on_token is not None:
                on_token(piece)
            emit_token(piece)
        else:
            emit_tool_call_delta(piece)

    return both


def _begin(model: ChatModel, request: ModelRequest) -> OpenSpan | None:
    """Open the ``model_call`` span; refuse the request (the span records why) when the run's usage limits
    would be exceeded by it."""
    opened = start_span("model_call", "model_call", "model_call", None, {"model": model.name, "request": request}, True)
    if opened is not None:
        context = opened[2]
        if context.limits is not None:
            try:
                context.limits.check(context.trace.usage)
            except BaseException as exc:
                close_span(opened, None, exc)
                raise
    return opened


def _end(opened: OpenSpan | None, reply: ModelReply | None, error: BaseException | None) -> None:
    if opened is not None and reply is not None:
        span, _, context = opened
        span.attributes["reply"] = reply  # its latency is the span's duration (Span.to_dict exports it as latency_s)
        usage = reply.usage
        context.trace.usage.add(usage.prompt_tokens, usage.completion_tokens, usage.cost)
        if reply.fallback is not None:
            _record_fallback(span.attributes, reply.fallback)
    elif opened is not None and error is not None:
        record = getattr(error, "fallback", None)
        if type(record) is Fallback:
            _record_fallback(opened[0].attributes, record)
    close_span(opened, None, error)


def _record_fallback(attributes: dict, fallback: Fallback) -> None:
    """A fallback chain's outcome as the ``model_call`` span's attributes: ``answered_by`` (the model that answered,
    when one did) and ``fallbacks`` (the models that failed before, with their errors)."""
    if fallback.model is not None:
        attributes["answered_by"] = fallback.model
    attributes["fallbacks"] = fallback.failed


def call_model(model: ChatModel, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
    """Call ``model`` once, recording a ``model_call`` span (and telling the run's hooks) inside a run, and
    adding the reply's usage to the run's (``trace.usage``); a request the run's :class:`UsageLimits` forbid
    raises :class:`UsageLimitExceeded` instead of being sent.

    References only: the request and reply are summarised when the trace is exported, not on the hot path.
    """
    opened = _begin(model, request)
    try:
        reply = model.complete(request, _streaming(on_token, opened))
    except BaseException as exc:
        _end(opened, None, exc)
        raise
    _end(opened, reply, None)
    return reply


async def acall_model(model: ChatModel, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
    """Async twin of :func:`call_model`."""
    opened = _begin(model, request)
    try:
        reply = await model.acomplete(request, _streaming(on_token, opened))
    except BaseException as exc:
        _end(opened, None, exc)
        raise
    _end(opened, reply, None)
    return reply
