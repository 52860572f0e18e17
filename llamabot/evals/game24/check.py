"""Game of 24: the checker. Pure; the expression is parsed by a small recursive-descent parser, never eval'd.

A solution is right when the numbers it uses equal the puzzle's as a multiset and it equals 24 under exact
rational arithmetic (:class:`fractions.Fraction`). The grammar is the game's: integers, ``+ - * /`` (also
``× ÷ −``) and parentheses; no unary minus, no decimals, no concatenation.

    expression := term (("+" | "-") term)*
    term       := factor (("*" | "/") factor)*
    factor     := INTEGER | "(" expression ")"
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from llamabot.errors import LlamabotError, excerpt

TARGET = Fraction(24)
MAX_EXPRESSION_CHARS = 500
MAX_NESTING = 64
#: The most digits of a puzzle's number (far below Python's 4,300-digit integer limit).
MAX_NUMBER_DIGITS = 100
_OPERATORS = {"×": "*", "·": "*", "∗": "*", "÷": "/", "∕": "/", "−": "-", "–": "-"}
_TOKEN = re.compile(r"\s*(?:([0-9]+)|([-+*/()]))")


_APPLY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


class ExpressionError(LlamabotError, ValueError):
    """An expression that is not a Game-of-24 expression; the message says what and at which character."""


class PuzzleError(LlamabotError, ValueError):
    """A puzzle that is not a list of whole numbers (``"4 9 10 13"``)."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The exact value of an expression and the numbers it used, in order."""

    value: Fraction
    numbers: tuple[int, ...]


def parse_puzzle(puzzle: str) -> tuple[int, ...]:
    """The puzzle's numbers: whole numbers separated by spaces or commas. Raises :class:`PuzzleError`."""
    parts = [p for p in re.split(r"[\s,]+", str(puzzle).strip()) if p]
    if not parts or not all(re.fullmatch(r"[0-9]+", p) for p in parts):
        raise PuzzleError(f"a Game-of-24 puzzle is whole numbers separated by spaces, e.g. '4 9 10 13'; "
                          f"got {excerpt(puzzle)}")
    too_long = next((p for p in parts if len(p) > MAX_NUMBER_DIGITS), None)
    if too_long is not None:
        raise PuzzleError(f"a Game-of-24 number has at most {MAX_NUMBER_DIGITS} digits; got one of {len(too_long)}")
    return tuple(int(p) for p in parts)



def _tokens(expression: str) -> list[tuple[str, int]]:
    """``(token, position)`` pairs; a character outside the grammar raises :class:`ExpressionError`."""
    text = "".join(_OPERATORS.get(ch, ch) for ch in expression)
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            rest = text[position:]
            if rest.strip() == "":
                break
            position += len(rest) - len(rest.lstrip())
            raise ExpressionError(f"unexpected character {text[position]!r} at position {position} in {expression!r}")
        tokens.append((match.group(1) or match.group(2), match.start(1) if match.group(1) else match.start(2)))
        position = match.end()
    return tokens


class _Parser:
    """Recursive descent over the tokens, computing the exact value and collecting the numbers used."""

    def __init__(self, expression: str):
        self.expression = expression
        self.tokens = _tokens(expression)
        self.index = 0
        self.numbers: list[int] = []

    def _peek(self) -> str | None:
        return self.tokens[self.index][0] if self.index < len(self.tokens) else None

    def _error(self, what: str) -> ExpressionError:
        where = f"at position {self.tokens[self.index][1]}" if self.index < len(self.tokens) else "at the end"
        return ExpressionError(f"{what} {where} in {self.expression!r}")

    def parse(self) -> Evaluation:
        if not self.tokens:
            raise ExpressionError("the expression is empty")
        value = self._expression(0)
        if self.index != len(self.tokens):
            raise self._error(f"unexpected {self._peek()!r}")
        return Evaluation(value, tuple(self.numbers))

    def _expression(self, depth: int) -> Fraction:
        return self._chain(self._term, ("+", "-"), depth)

    def _term(self, depth: int) -> Fraction:
        return self._chain(self._factor, ("*", "/"), depth)

    def _chain(self, operand: Any, operators: tuple[str, str], depth: int) -> Fraction:
        """``operand (op operand)*`` for one precedence level, left to right."""
        value = operand(depth)
        while self._peek() in operators:
            symbol = self.tokens[self.index][0]
            self.index += 1
            right = operand(depth)
            if symbol == "/" and right == 0:
                raise ExpressionError(f"division by zero in {self.expression!r}")
            value = _APPLY[symbol](value, right)
        return value

    def _factor(self, depth: int) -> Fraction:
        token = self._peek()
        if token is None:
            raise self._error("expected a number or '('")
        if token == "(":
            if depth >= MAX_NESTING:
                raise self._error(f"more than {MAX_NESTING} nested parentheses")
            self.index += 1
            value = self._expression(depth + 1)
            if self._peek() != ")":
                raise self._error("expected ')'")
            self.index += 1
            return value
        if token[0] in "0123456789":
            self.index += 1
            self.numbers.append(int(token))
            return Fraction(int(token))
        raise self._error(f"expected a number or '(' but found {token!r}")


def evaluate_expression(expression: str) -> Evaluation:
    """The exact value and the numbers of ``expression``. Raises :class:`ExpressionError` (bad syntax, a
    character outside the grammar, division by zero, too long or too deeply nested)."""
    if not isinstance(expression, str):
        raise ExpressionError(f"an expression is text, got {type(expression).__name__}")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    return _Parser(expression).parse()


def _left_side(expression: str) -> str | None:
    """``expr`` from ``expr`` or ``expr = 24``; ``None`` when the right side is anything but 24."""
    if "=" not in expression:
        return expression
    left, _, right = expression.partition("=")
    return left if right.strip() == "24" else None


def check_game24(puzzle: str, expression: str) -> bool:
    """True when ``expression`` (optionally ``... = 24``) uses exactly the puzzle's numbers, each once, and
    equals 24 exactly. A malformed expression is simply wrong (``False``); a malformed *puzzle* raises
    :class:`PuzzleError`, since puzzles come from the caller, not from the model."""
    numbers = parse_puzzle(puzzle)
    if not isinstance(expression, str):
        return False
    left = _left_side(expression)
    if left is None:
        return False
    try:
        evaluation = evaluate_expression(left)
    except ExpressionError:
        return False
    return sorted(evaluation.numbers) == sorted(numbers) and evaluation.value == TARGET
