"""What a run spends, and the limits that stop it: :class:`RunUsage` and :class:`UsageLimits`.

Every trace keeps a live :class:`RunUsage` (``trace.usage``): the model seam adds each reply's token counts and
cost as the call ends, so a run's total is known at any moment without walking its spans. A run (and every run
nested in it, e.g. a bot called from a tool) may carry :class:`UsageLimits`; the seam checks them before each
request and refuses the request that would exceed one with :class:`UsageLimitExceeded`, which carries the usage
so far.

What a check can know: the number of requests is exact (the request that would be one too many is never sent);
tokens and cost are only known after a call, so ``max_tokens``/``max_cost`` stop the run before the first request
made once the total has reached the limit (one request may carry the total past it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llamabot.errors import LlamabotError


class RunUsage:
    """Requests, input (prompt) and output (completion) tokens, and cost in USD (``None`` until a provider
    reports one) of a run. Mutable: the seam adds to it as calls end; take :meth:`copy` for a snapshot."""

    __slots__ = ("requests", "input_tokens", "output_tokens", "cost")

    def __init__(self, requests: int = 0, input_tokens: int = 0, output_tokens: int = 0, cost: float | None = None):
        self.requests, self.input_tokens, self.output_tokens, self.cost = requests, input_tokens, output_tokens, cost

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        """Count one request that used these tokens (and cost, when the provider gave one)."""
        self.requests += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost is not None:
            self.cost = cost if self.cost is None else self.cost + cost

    def copy(self) -> RunUsage:
        return RunUsage(self.requests, self.input_tokens, self.output_tokens, self.cost)

    def __sub__(self, other: RunUsage) -> RunUsage:
        """What was spent since the snapshot ``other`` (a nested run's own share of a shared trace)."""
        cost = self.cost
        if cost is not None and other.cost is not None:
            cost -= other.cost
        return RunUsage(self.requests - other.requests, self.input_tokens - other.input_tokens,
                        self.output_tokens - other.output_tokens, cost)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunUsage):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (f"RunUsage(requests={self.requests}, input_tokens={self.input_tokens}, "
                f"output_tokens={self.output_tokens}, cost={self.cost})")

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "total_tokens": self.total_tokens, "cost": self.cost}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunUsage:
        return cls(int(data.get("requests", 0)), int(data.get("input_tokens", 0)), int(data.get("output_tokens", 0)),
                   data.get("cost"))

    def describe(self) -> str:
        """``3 requests, 1200 input + 80 output tokens, $0.0012`` (the cost only when known)."""
        text = f"{self.requests} requests, {self.input_tokens} input + {self.output_tokens} output tokens"
        return text if self.cost is None else f"{text}, ${self.cost:.6g}"


class UsageLimitExceeded(LlamabotError):
    """A run reached one of its :class:`UsageLimits`; raised before the request that would exceed it.

    ``limit`` names the limit (``max_requests``, ``max_tokens``, ``max_cost``), ``value`` is its setting and
    ``usage`` the run's usage so far (a snapshot).
    """

    def __init__(self, limit: str, value: float, usage: RunUsage):
        self.limit, self.value, self.usage = limit, value, usage
        super().__init__(
            f"usage limit {limit}={value} reached after {usage.describe()}; request {usage.requests + 1} was not sent"
        )


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """Upper bounds on what one run may spend: ``max_requests`` model requests, ``max_tokens`` input plus output
    tokens, ``max_cost`` USD (counted only for providers that report a cost). ``None`` means no bound.

    Give it to any bot (``AgentBot(..., usage_limits=UsageLimits(max_requests=5))``, or ``bot.usage_limits = ...``)
    or to one run (``bot(q, usage_limits=...)``). Runs nested in a limited run share its usage and its limits.
    """

    max_requests: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_requests", "max_tokens", "max_cost"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"UsageLimits.{name} must be a number >= 0 or None, got {value!r}")
            if name != "max_cost" and not isinstance(value, int):
                raise ValueError(f"UsageLimits.{name} must be a whole number, got {value!r}")

    def check(self, usage: RunUsage) -> None:
        """Raise :class:`UsageLimitExceeded` if one more request would exceed a limit, given ``usage`` so far."""
        if self.max_requests is not None and usage.requests >= self.max_requests:
            raise UsageLimitExceeded("max_requests", self.max_requests, usage.copy())
        if self.max_tokens is not None and usage.total_tokens >= self.max_tokens:
            raise UsageLimitExceeded("max_tokens", self.max_tokens, usage.copy())
        if self.max_cost is not None and usage.cost is not None and usage.cost >= self.max_cost:
            raise UsageLimitExceeded("max_cost", self.max_cost, usage.copy())
