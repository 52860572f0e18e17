"""The one layer (AGT-PAR-090): the node and runner that AoT's atoms, ANoT's steps and the agent's early tool
calls share. Every item runs, at most ``limit`` at once (threads in a sync flow, tasks in an async one); the
results come in item order, the first failure in item order is raised once all finished; in a durable run the
items start one at a time, in order."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from llamabot.agents import AsyncFlow, Flow
from llamabot.agents.layer import LayerNode, arun_items, run_items, start_items
from llamabot.models.exchange import using_steps


class Gauge:
    """Counts the items running at once and the order they started in."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.started: list[int] = []
        self.lock = threading.Lock()

    def enter(self, item: int) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.started.append(item)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


class Squares(LayerNode):
    """Squares its items (``shared["items"]``) into ``shared["out"]``; an item in ``shared["bad"]`` fails."""

    def __init__(self, limit: int, gauge: Gauge, delay: float = 0.05):
        super().__init__(limit)
        self.gauge, self.delay = gauge, delay

    def prep(self, shared: dict[str, Any]) -> tuple[list[int], set[int]]:
        return shared["items"], shared.get("bad", set())

    def items(self, inp: tuple[list[int], set[int]]) -> list[int]:
        return inp[0]

    def _result(self, inp: tuple[list[int], set[int]], item: int) -> int:
        self.gauge.leave()
        if item in inp[1]:
            raise ValueError(f"item {item} failed")
        return item * item

    def run_item(self, inp: tuple[list[int], set[int]], item: int) -> int:
        self.gauge.enter(item)
        time.sleep(self.delay)
        return self._result(inp, item)

    async def arun_item(self, inp: tuple[list[int], set[int]], item: int) -> int:
        self.gauge.enter(item)
        await asyncio.sleep(self.delay)
        return self._result(inp, item)

    def post(self, shared: dict[str, Any], inp: Any, results: list[int]) -> None:
        shared["out"] = results


def run_sync(limit: int, items: list[int], **shared: Any) -> tuple[dict[str, Any], Gauge]:
    gauge = Gauge()
    state = {"items": items, **shared}
    Flow(start=Squares(limit, gauge)).run(state)
    return state, gauge


async def run_async(limit: int, items: list[int], **shared: Any) -> tuple[dict[str, Any], Gauge]:
    gauge = Gauge()
    state = {"items": items, **shared}
    await AsyncFlow(start=Squares(limit, gauge)).run_async(state)
    return state, gauge


@pytest.mark.parametrize("limit", [1, 3, 8])
async def test_agt_par_090_at_most_limit_items_run_at_once_sync_and_async(limit):
    items = list(range(8))
    sync_state, sync_gauge = run_sync(limit, items)
    async_state, async_gauge = await run_async(limit, items)
    assert sync_gauge.most == async_gauge.most == limit  # they overlapped, never more than the limit
    assert sync_state["out"] == async_state["out"] == [i * i for i in items]  # the same items, in item order


async def test_agt_par_090_every_item_runs_and_the_first_failure_in_item_order_is_raised_either_way():
    items, bad = list(range(6)), {4, 2}
    gauges = [Gauge(), Gauge(), Gauge()]
    with pytest.raises(ValueError, match="item 2 failed"):
        Flow(start=Squares(3, gauges[0])).run({"items": items, "bad": bad})
    with pytest.raises(ValueError, match="item 2 failed"):
        Flow(start=Squares(1, gauges[1])).run({"items": items, "bad": bad})
    with pytest.raises(ValueError, match="item 2 failed"):
        await AsyncFlow(start=Squares(3, gauges[2])).run_async({"items": items, "bad": bad})
    assert all(sorted(g.started) == items for g in gauges)  # a failure kept no neighbour from running


def test_agt_par_090_the_runner_collects_failures_after_every_item_finished():
    ran: list[int] = []

    def work(item: int) -> int:
        ran.append(item)
        if item % 2:
            raise KeyError(item)
        return item

    for limit in (1, 4):
        ran.clear()
        with pytest.raises(KeyError, match="1"):
            run_items(list(range(5)), work, limit)
        assert sorted(ran) == [0, 1, 2, 3, 4]
    assert run_items([], work, 4) == []


class Recording:
    """A step runner (a durable run's): its presence alone makes a layer run one item at a time."""

    def step(self, request: Any, model: Any, on_token: Any) -> Any:
        raise AssertionError("the items make no model call")

    async def astep(self, request: Any, model: Any, on_token: Any) -> Any:
        raise AssertionError("the items make no model call")


async def test_agt_par_090_in_a_durable_run_items_start_one_at_a_time_in_order():
    items = [5, 3, 9, 1]
    with using_steps(Recording()):
        sync_state, sync_gauge = run_sync(4, items)
        async_state, async_gauge = await run_async(4, items)
    assert sync_gauge.most == async_gauge.most == 1
    assert sync_gauge.started == async_gauge.started == items
    assert sync_state["out"] == async_state["out"] == [25, 9, 81, 1]


async def test_agt_par_090_started_items_start_in_item_order_and_a_cancelled_layer_cancels_them():
    order: list[int] = []
    gate = asyncio.Event()

    async def work(item: int) -> int:
        order.append(item)
        await gate.wait()
        return item

    tasks = start_items([0, 1, 2, 3], work, 2)
    await asyncio.sleep(0.01)
    assert order == [0, 1]  # two at once; the others wait their turn
    gate.set()
    assert await asyncio.gather(*tasks) == [0, 1, 2, 3] and order == [0, 1, 2, 3]

    gate.clear()
    running = asyncio.ensure_future(arun_items([0, 1, 2], work, 3))
    await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


def test_agt_par_090_the_limit_must_be_a_whole_number_of_at_least_one():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="limit must be a whole number >= 1"):
            Squares(bad, Gauge())  # type: ignore[arg-type]


def test_agt_par_090_aot_and_anot_run_their_layers_on_this_node():
    from llamabot.models.scripted import ScriptedModel
    from llamabot.reasoning.anot.nodes import LayerNode as ANoTLayer
    from llamabot.reasoning.aot.nodes import LayerNode as AoTLayer

    assert issubclass(AoTLayer, LayerNode) and issubclass(ANoTLayer, LayerNode)
    assert ANoTLayer(ScriptedModel(), {}, concurrency=3).limit == 3  # ANoT's concurrency is the layer's limit
