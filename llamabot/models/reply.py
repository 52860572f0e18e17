"""The provider-neutral shapes that cross the model seam: a request in, a reply out.

Every model behind the seam (any LiteLLM model string, the embedded ``local/`` model, the scripted
model) answers with a :class:`ModelReply`. Bots never look at a provider's raw response.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, frozen=True, init=False)
class Usage:
    """Token counts of one model call (and its cost in USD when the provider knows it)."""

    prompt_tokens: int
    completion_tokens: int
    cost: float | None

    def __init__(self, prompt_tokens: int = 0, completion_tokens: int = 0, cost: float | None = None):
        # the fields set through their slots (frozen: no attribute assignment), not the generated __init__'s
        # object.__setattr__ per field: every model call makes one, and this takes a third less
        _SET_PROMPT(self, prompt_tokens)
        _SET_COMPLETION(self, completion_tokens)
        _SET_COST(self, cost)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens, cost
        )


_SET_PROMPT = Usage.prompt_tokens.__set__  # type: ignore[attr-defined]
_SET_COMPLETION = Usage.completion_tokens.__set__  # type: ignore[attr-defined]
_SET_COST = Usage.cost.__set__  # type: ignore[attr-defined]


@dataclass(slots=True, frozen=True)
class ToolCallRequest:
    """A tool call exactly as the model wrote it: ``arguments`` is the raw JSON text, not yet trusted."""

    id: str
    name: str
    arguments: str

    def to_message(self) -> dict[str, Any]:
        """The OpenAI chat format of this call, as it appears in an assistant message's ``tool_calls``."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(slots=True)
class ModelRequest:
    """One call to a model: what was sent. The scripted model records these so tests can read prompts."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    response_format: Any = None
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A compact, JSON-ready summary for traces (counts, not the whole prompt)."""
        return {
            "model": self.model,
            "messages": len(self.messages),
            "last_user_text": self.last_user_text[:500],
            "tools": [t.get("function", t).get("name") for t in self.tools or ()],
            "tool_choice": self.tool_choice,
            "response_format": bool(self.response_format),
        }

    def call_params(self, defaults: dict[str, Any]) -> dict[str, Any]:
        """The parameters a provider gets for this request: ``defaults``, then the request's own, then its tools
        (and tool choice) and response format when set."""
        params: dict[str, Any] = {**defaults, **self.params}
        if self.tools:
            params["tools"] = self.tools
            if self.tool_choice is not None:
                params["tool_choice"] = self.tool_choice
        if self.response_format is not None:
            params["response_format"] = self.response_format
        return params

    @property
    def last_user_text(self) -> str:
        """The text of the last user message (handy in scripted responders and assertions)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content") or "")
        return ""


@dataclass(slots=True, frozen=True)
class FailedAttempt:
    """A model of a fallback chain that failed: its name, the error (``"RateLimitError: ..."``) and the provider's
    HTTP status when there was one."""

    model: str
    error: str
    status_code: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "error": self.error, "status_code": self.status_code}


@dataclass(slots=True, frozen=True)
class Fallback:
    """How a fallback chain (:class:`~llamabot.models.fallback.FallbackModel`) came to its outcome: ``model``, the
    name of the model that answered (``None`` when none did), after the models in ``failed`` failed, in order."""

    model: str | None
    failed: tuple[FailedAttempt, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "failed": [attempt.to_dict() for attempt in self.failed]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fallback:
        return cls(data.get("model"), tuple(FailedAttempt(**attempt) for attempt in data.get("failed") or ()))


@dataclass(slots=True)
class ModelReply:
    """What a model answered: text content, tool calls, usage and the wall-clock latency of the call.
    ``fallback``: set by a fallback chain when a model other than its first answered (which, and why the
    others did not); ``None`` otherwise."""

    content: str | None = None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    latency_s: float = 0.0
    fallback: Fallback | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant chat message to append to a conversation (with ``tool_calls`` when present)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        return message

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record of this reply, as stored in traces and replayed by the scripted model."""
        return {
            "content": self.content,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls],
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "cost": self.usage.cost,
            },
            "model": self.model,
            "finish_reason": self.finish_reason,
            "latency_s": self.latency_s,
            **({"fallback": self.fallback.to_dict()} if self.fallback is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelReply:
        """Rebuild a reply recorded by :meth:`to_dict`."""
        calls = data.get("tool_calls") or []
        return cls(
            content=data.get("content"),
            tool_calls=tuple(
                ToolCallRequest(
                    id=c["id"],
                    name=c["name"],
                    arguments=c["arguments"] if isinstance(c["arguments"], str) else json.dumps(c["arguments"]),
                )
                for c in calls
            ),
            usage=Usage(**(data.get("usage") or {})),
            model=data.get("model", ""),
            finish_reason=data.get("finish_reason"),
            latency_s=float(data.get("latency_s", 0.0)),
            fallback=Fallback.from_dict(data["fallback"]) if data.get("fallback") else None,
        )
