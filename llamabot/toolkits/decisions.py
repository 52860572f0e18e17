"""Decision tools: atoms of ``kind: decision`` in Atom of Thought plans. They combine or choose among the
results of other atoms rather than compute from literals."""

from __future__ import annotations

from llamabot.tools.tool import tool


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def average(values: list[float]) -> float:
    """The arithmetic mean of several values.

    Args:
        values: The values to average (usually references to earlier results).
    """
    if not values:
        raise ValueError("average needs at least one value")
    return sum(values) / len(values)


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def choose_cheapest(options: list[str], prices: list[float]) -> str:
    """The option with the lowest price (the first one on a tie).

    Args:
        options: The names of the options.
        prices: Their prices, in the same order.
    """
    if not options or len(options) != len(prices):
        raise ValueError(f"choose_cheapest needs as many prices as options (got {len(options)} and {len(prices)})")
    return min(zip(prices, range(len(options)), options, strict=True))[2]


DECISION_TOOLS = (average, choose_cheapest)
