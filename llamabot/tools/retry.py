"""A tool's retry policy: how many attempts, how long to wait between them, which failures are tried again.

The policy is evaluated with tenacity's strategy objects (``stop_after_attempt``, ``wait_exponential`` plus
``wait_random`` jitter, ``retry_if_exception_type``) on a tenacity ``RetryCallState``. It only *computes* the
decision and the wait; the tool-call exchange (:mod:`llamabot.tools.call`) yields the wait as a ``Sleep`` effect,
so a sync run sleeps with ``time.sleep`` and an async run awaits ``asyncio.sleep`` and never blocks its loop.

Why tenacity rather than stamina: stamina is an opinionated layer over tenacity whose API is a decorator and a
context manager that do the sleeping themselves (``time.sleep``/``asyncio.sleep`` inside the library), with no
way to get the next wait and sleep elsewhere; our retries live inside a generator shared by the sync and async
drivers, which needs exactly the pieces tenacity exposes: composable stop/wait/retry strategies that are plain
callables on a call state. tenacity is maintained, widely used, dependency-free, and stamina would add a second
package for nothing we use. It is imported lazily, on the first retry decision, because importing it costs
tens of milliseconds (it imports asyncio) and most tools have no retry policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True, slots=True)
class Retry:
    """Retry a failing tool: at most ``attempts`` attempts in all; before attempt ``n + 1`` wait
    ``backoff_s * multiplier ** (n - 1)`` seconds (at most ``max_backoff_s``) plus a random jitter of up to
    ``jitter_s``. Only exceptions of the types in ``retry_on`` are retried (a timeout is a ``TimeoutError``,
    so it is retried by default); invalid arguments never reach an attempt, so they are never retried.

    ``multiplier=1`` gives a constant backoff; ``backoff_s=0`` retries at once.
    """

    attempts: int = 3
    backoff_s: float = 0.1
    multiplier: float = 2.0
    max_backoff_s: float = 5.0
    jitter_s: float = 0.1
    retry_on: tuple[type[BaseException], ...] = (Exception,)

    def __post_init__(self) -> None:
        if isinstance(self.retry_on, type):
            object.__setattr__(self, "retry_on", (self.retry_on,))
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError(f"Retry.attempts must be an int >= 1 (attempts in all), got {self.attempts!r}")
        for name in ("backoff_s", "max_backoff_s", "jitter_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"Retry.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.multiplier < 1:
            raise ValueError(f"Retry.multiplier must be >= 1, got {self.multiplier!r}")
        if not all(isinstance(t, type) and issubclass(t, BaseException) for t in self.retry_on):
            raise ValueError(f"Retry.retry_on must be exception types, got {self.retry_on!r}")

    def begin(self) -> RetryState:
        """The state of one tool call under this policy (fresh per call)."""
        return RetryState(self)


class RetryState:
    """One call's retry bookkeeping: after each failed attempt, :meth:`after` says whether and when to retry."""

    __slots__ = ("_policy", "_state")

    def __init__(self, policy: Retry):
        self._policy = policy
        self._state: Any = None

    def after(self, error: BaseException) -> float | None:
        """``error`` ended the latest attempt: the seconds to wait before the next one, or ``None`` to give up."""
        if self._policy.attempts == 1:
            return None
        stop, wait, retry, call_state = _strategies(self._policy)
        if self._state is None:
            self._state = call_state(None, None, (), {})
        state = self._state
        state.set_exception((type(error), error, error.__traceback__))
        if not retry(state) or stop(state):
            return None
        seconds = float(wait(state))
        state.prepare_for_next_attempt()
        return seconds


@lru_cache(maxsize=256)
def _strategies(policy: Retry) -> tuple[Any, Any, Any, Any]:
    """tenacity's stop, wait and retry strategies for ``policy`` (built once per policy) and its call-state type."""
    import tenacity

    wait = tenacity.wait_exponential(multiplier=policy.backoff_s, exp_base=policy.multiplier, max=policy.max_backoff_s)
    if policy.jitter_s:
        wait = wait + tenacity.wait_random(0, policy.jitter_s)
    stop = tenacity.stop_after_attempt(policy.attempts)
    return stop, wait, tenacity.retry_if_exception_type(policy.retry_on), tenacity.RetryCallState
