"""A calculator tool set: an importable example toolkit for agents (and the AoT pattern's default tools)."""

from __future__ import annotations

from llamabot.tools.tool import tool


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def add(a: float, b: float) -> float:
    """Add two numbers: a + b.

    Args:
        a: The first term.
        b: The second term.
    """
    return a + b


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def subtract(a: float, b: float) -> float:
    """Subtract b from a: a - b.

    Args:
        a: The number to subtract from.
        b: The number to subtract.
    """
    return a - b


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def multiply(a: float, b: float) -> float:
    """Multiply two numbers: a * b.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def divide(a: float, b: float) -> float:
    """Divide a by b: a / b. Fails when b is 0.

    Args:
        a: The dividend.
        b: The divisor (not zero).
    """
    if b == 0:
        raise ZeroDivisionError("cannot divide by zero")
    return a / b


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def power(base: float, exponent: float) -> float:
    """Raise base to the power exponent: base ** exponent.

    Args:
        base: The base.
        exponent: The exponent.
    """
    return base**exponent


CALCULATOR_TOOLS = (add, subtract, multiply, divide, power)
