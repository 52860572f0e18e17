"""A calculator tool set: an importable example toolkit for agents (and the AoT pattern's default tools).

Numbers behave as people expect: integer arithmetic stays integer (``multiply(23, 19)`` is ``437``, not
``437.0``), and a float anywhere keeps the result a float. Each tool accepts :data:`Number` (``int | float``): a
JSON ``23`` stays an ``int``, ``23.0`` a ``float``, a numeric string becomes the number it spells; the model sees
``"type": "number"``. ``divide`` of two ints that divide evenly gives an int; otherwise the true quotient. ``power`` refuses a result
of more than 4,096 bits. ``calculate`` computes a whole expression (``"(15 + 7) * 3"``) with the same rules, read
by :mod:`llamabot.toolkits.expression` (never ``eval``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from llamabot.toolkits.expression import bounded_power, calculate_expression, divide_numbers
from llamabot.tools.tool import tool


def as_number(value: object) -> int | float:
    """``value`` as an ``int`` or ``float``, keeping which one it is; numeric strings are parsed (``"23"`` -> 23).

    Anything else, booleans included, fails with pydantic's own wording (reported under the argument's name).
    """
    if type(value) is int or type(value) is float:  # the usual case, without isinstance's union
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        for parse in (int, float):
            try:
                return parse(value.strip())
            except ValueError:
                pass
        raise PydanticCustomError(
            "float_parsing", "Input should be a valid number, unable to parse string as a number"
        )
    raise PydanticCustomError("float_type", "Input should be a valid number")


#: An ``int`` or a ``float``, validated by :func:`as_number` (one error message, not one per union member).
Number = Annotated[int | float, PlainValidator(as_number), WithJsonSchema({"type": "number"})]


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def add(a: Number, b: Number) -> Number:
    """Add two numbers: a + b.

    Args:
        a: The first term.
        b: The second term.
    """
    return a + b


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def subtract(a: Number, b: Number) -> Number:
    """Subtract b from a: a - b.

    Args:
        a: The number to subtract from.
        b: The number to subtract.
    """
    return a - b


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def multiply(a: Number, b: Number) -> Number:
    """Multiply two numbers: a * b.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def divide(a: Number, b: Number) -> Number:
    """Divide a by b: a / b. Fails when b is 0.

    Args:
        a: The dividend.
        b: The divisor (not zero).
    """
    if b == 0:
        raise ZeroDivisionError("cannot divide by zero")
    return divide_numbers(a, b)


@tool(blocking=False)  # pure arithmetic: returns at once, no worker thread needed in async runs
def power(base: Number, exponent: Number) -> Number:
    """Raise base to the power exponent: base ** exponent.

    Args:
        base: The base.
        exponent: The exponent.
    """
    try:
        return bounded_power(base, exponent)  # a huge power fails at once instead of running for hours
    except ArithmeticError as exc:
        raise ValueError(str(exc)) from None


@tool(blocking=False)  # parsing and arithmetic on at most 1,000 characters: returns at once
def calculate(expression: str) -> Number:
    """Compute an arithmetic expression exactly: numbers, parentheses and + - * / // % ** (e.g. "(15 + 7) * 3").

    Args:
        expression: The expression; powers are written **, not ^.
    """
    return calculate_expression(expression)


CALCULATOR_TOOLS = (add, subtract, multiply, divide, power)
#: The calculator as one tool that computes a whole expression (``AoTBot(expressions=True)`` plans with it).
EXPRESSION_TOOLS = (calculate,)
