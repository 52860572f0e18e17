"""Arithmetic expressions, read and computed without ``eval``. Pure.

:func:`calculate_expression` takes text such as ``"(15 + 7) * 3 - 10 / 4"`` and returns its value with the
calculator's number rules (integer arithmetic stays integer; ``/`` of two ints that divide evenly gives an int,
otherwise the true quotient). Python's own parser reads the text (``ast.parse``, nothing is executed); only
numbers, parentheses, unary ``+``/``-`` and the operators ``+ - * / // % **`` are accepted, everything else
(names, calls, attributes, strings, comparisons...) is refused with :class:`ExpressionError` naming what and
where. Bounded: at most :data:`MAX_LENGTH` characters (Python's parser refuses deeper nesting than it can read), the
walk is iterative, and a power may not make a number of more than :data:`MAX_POWER_BITS` bits, so no input can
make it run long or exhaust memory.
``×``, ``÷`` and ``−`` are read as ``*``, ``/`` and ``-``; ``^`` is refused (in Python it is not a power).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from llamabot.errors import LlamabotError

Number = int | float

#: The longest expression accepted (characters).
MAX_LENGTH = 1000
#: The most bits the result of a power may have (``2 ** 4096`` has 4097: refused).
MAX_POWER_BITS = 4096

_SPELLINGS = str.maketrans({"×": "*", "÷": "/", "\u2212": "-"})  # times, divide, minus signs


class ExpressionError(LlamabotError, ValueError):
    """The text is not an arithmetic expression this module computes, or computing it failed (division by
    zero, a power too large). The message names what was wrong and where (column, 1-based)."""


def divide_numbers(a: Number, b: Number) -> Number:
    """``a / b`` as people write it: ints that divide evenly give an int (``12 / 4`` is 3), else the quotient."""
    if type(a) is int and type(b) is int and a % b == 0:
        return a // b
    return a / b


def bounded_power(a: Number, b: Number) -> Number:
    """``a ** b``; ArithmeticError when the result would have more than :data:`MAX_POWER_BITS` bits or is not
    real."""
    if a not in (0, 1, -1) and abs(b) * math.log2(abs(a) + 1) > MAX_POWER_BITS:
        raise ArithmeticError(f"{a!r} ** {b!r} is too large (over {MAX_POWER_BITS} bits)")
    result = a**b
    if isinstance(result, complex):
        raise ArithmeticError(f"{a!r} ** {b!r} is not a real number")
    return result


_BINARY: dict[type[ast.operator], tuple[str, Callable[[Number, Number], Number]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", divide_numbers),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
    ast.Pow: ("**", bounded_power),
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def calculate_expression(text: str) -> Number:
    """The value of the arithmetic expression ``text``; :class:`ExpressionError` when it is not one or cannot
    be computed."""
    if not isinstance(text, str):
        raise ExpressionError(f"an expression is text, not {type(text).__name__}")
    source = text.translate(_SPELLINGS).strip()
    if not source:
        raise ExpressionError("the expression is empty")
    if len(source) > MAX_LENGTH:
        raise ExpressionError(
            f"the expression is {len(source)} characters long; at most {MAX_LENGTH} are accepted"
        )
    if "^" in source:
        raise ExpressionError(f"'^' at column {source.index('^') + 1}: write powers with '**'")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise ExpressionError(f"not an arithmetic expression{where}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError("the expression is nested too deeply") from None
    value = _value(tree.body)
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError(f"the result is not a finite number ({value})")
    return value


def _value(root: ast.expr) -> Number:
    """Post-order walk with an explicit stack (a long sum nests as deeply as it has terms: no recursion)."""
    values: list[Number] = []
    stack: list[tuple[ast.expr, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if isinstance(node, ast.Constant):
            if type(node.value) not in (int, float):
                raise ExpressionError(f"{node.value!r} at column {node.col_offset + 1} is not a number")
            values.append(node.value)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            if not ready:
                stack.extend(((node, True), (node.right, False), (node.left, False)))
                continue
            right, left = values.pop(), values.pop()
            values.append(_apply(node, left, right))
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            if not ready:
                stack.extend(((node, True), (node.operand, False)))
                continue
            values.append(_UNARY[type(node.op)](values.pop()))
        else:
            raise ExpressionError(
                f"{_describe(node)} at column {getattr(node, 'col_offset', 0) + 1} is not "
                "allowed: only numbers, parentheses and + - * / // % ** are"
            )
    return values.pop()


def _apply(node: ast.BinOp, left: Number, right: Number) -> Number:
    symbol, apply = _BINARY[type(node.op)]
    try:
        return apply(left, right)
    except ZeroDivisionError:
        raise ExpressionError(
            f"division by zero: {left!r} {symbol} {right!r} (column {node.col_offset + 1})"
        ) from None
    except (ArithmeticError, ValueError) as exc:
        raise ExpressionError(f"{exc} (column {node.col_offset + 1})") from None


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"the name {node.id!r}"
    if isinstance(node, ast.Call):
        return "a function call"
    if isinstance(node, ast.Tuple):
        return "a comma (write numbers without thousands separators)"
    if isinstance(node, ast.Compare):
        return "a comparison"
    if isinstance(node, ast.BinOp):
        return f"the operator {type(node.op).__name__}"
    return f"{type(node).__name__}"
