"""A layer: work items that do not depend on each other, run at most ``limit`` at a time.

One logic for AoT's atoms, ANoT's steps and the agent's parallel tool calls:

- **which items run**: every item, whatever the others do (an item's failure keeps no neighbour from running);
- **how they overlap**: the sync side on worker threads (each in a copy of the caller's context, so spans nest
  under the caller's), the async side on tasks under ``asyncio.gather``; at most ``limit`` at once either way.
  One at a time, in item order, when ``limit`` is 1, when there is one item, and in a durable run (a step runner
  is set: its steps are recorded in order, so they must start in a fixed order);
- **how failures are collected**: once every item has finished, the results in item order, or the first
  failure in item order is raised. A cancelled async caller cancels the items still running.

:func:`run_items` / :func:`arun_items` run a layer to its end; :func:`start_items` only starts the async side's
tasks (the agent's early tool calls are taken one by one by later steps). :class:`LayerNode` is the graph step
that runs one layer per visit.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from llamabot.graph.flow import DualNode
from llamabot.models.exchange import step_runner

T = TypeVar("T")
R = TypeVar("R")


def check_limit(limit: int, what: str = "the layer's limit") -> int:
    """``limit`` when it is a whole number >= 1, else ``ValueError`` naming ``what``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"{what} must be a whole number >= 1, got {limit!r}")
    return limit


def overlaps(limit: int, count: int) -> bool:
    """Whether ``count`` items may run at once under ``limit``: never in a durable run (see the module)."""
    return limit > 1 and count > 1 and step_runner() is None


def _captured(work: Callable[[T], R], item: T) -> R | BaseException:
    try:
        return work(item)
    except BaseException as exc:  # noqa: BLE001 - raised by _collected once every item has finished
        return exc


def _collected(results: list[Any]) -> list[Any]:
    """The results in item order, once every item has finished; the first failure in item order is raised."""
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def run_items(items: Sequence[T], work: Callable[[T], R], limit: int) -> list[R]:
    """Run ``work`` on every item on worker threads, at most ``limit`` at once (one at a time in the caller's
    thread when they may not overlap); the results in item order, or the first failure raised at the end."""
    if not overlaps(limit, len(items)):
        results = []
        for item in items:
            try:
                results.append(work(item))
            except Exception as exc:  # noqa: BLE001 - an interrupt stops the layer; a failure waits its turn
                results.append(exc)
        return _collected(results)
    with ThreadPoolExecutor(max_workers=min(limit, len(items)), thread_name_prefix="llamabot-layer") as pool:
        futures = [pool.submit(contextvars.copy_context().run, _captured, work, item) for item in items]
        return _collected([future.result() for future in futures])


async def _bounded(slots: asyncio.Semaphore, work: Callable[[T], Awaitable[R]], item: T) -> R:
    async with slots:
        return await work(item)


def start_items(items: Sequence[T], work: Callable[[T], Awaitable[R]], limit: int) -> list[asyncio.Task[R]]:
    """Start ``work`` on every item as a task, at most ``limit`` running at once (they start in item order: the
    semaphore is fair); the tasks, in item order. Call it on the event loop."""
    slots = asyncio.Semaphore(limit)
    return [asyncio.ensure_future(_bounded(slots, work, item)) for item in items]


async def arun_items(items: Sequence[T], work: Callable[[T], Awaitable[R]], limit: int) -> list[R]:
    """Async twin of :func:`run_items`: tasks under ``asyncio.gather``, at most ``limit`` at once."""
    if not overlaps(limit, len(items)):
        results = []
        for item in items:
            try:
                results.append(await work(item))
            except Exception as exc:  # noqa: BLE001 - a cancellation stops the layer; a failure waits its turn
                results.append(exc)
        return _collected(results)
    return _collected(list(await asyncio.gather(*start_items(items, work, limit), return_exceptions=True)))


class LayerNode(DualNode):
    """A graph step that runs one layer per visit (:func:`run_items` in a sync flow, :func:`arun_items` in an
    async one, at most ``limit`` items at once either way). Subclasses say which items a visit runs
    (:meth:`items`, from what ``prep`` returned) and the work of one (:meth:`run_item` / :meth:`arun_item`);
    ``prep`` and ``post`` keep their own bookkeeping. ``exec`` returns the items' results in item order."""

    span_kind = "layer"

    def __init__(self, limit: int):
        super().__init__()
        self.limit = check_limit(limit)

    def items(self, prep_res: Any) -> Sequence[Any]:
        """The items this visit runs."""
        raise NotImplementedError

    def run_item(self, prep_res: Any, item: Any) -> Any:
        """The work of one item (sync)."""
        raise NotImplementedError

    async def arun_item(self, prep_res: Any, item: Any) -> Any:
        """The work of one item (async; by default :meth:`run_item`)."""
        return self.run_item(prep_res, item)

    def exec(self, prep_res: Any) -> list[Any]:
        return run_items(self.items(prep_res), partial(self.run_item, prep_res), self.limit)

    async def exec_async(self, prep_res: Any) -> list[Any]:
        return await arun_items(self.items(prep_res), partial(self.arun_item, prep_res), self.limit)


__all__ = ["LayerNode", "arun_items", "check_limit", "overlaps", "run_items", "start_items"]
