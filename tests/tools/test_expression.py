"""The calculator's expression reader (TOOL-EXPR-*): arithmetic computed exactly, without ``eval``; anything
else refused with a typed error that names what and where; bounded in time and memory."""

from __future__ import annotations

import time

import pytest

from llamabot.toolkits.calculator import EXPRESSION_TOOLS, calculate, power
from llamabot.toolkits.expression import MAX_LENGTH, ExpressionError, calculate_expression
from llamabot.tools.call import invoke_tool
from llamabot.tools.tool import as_tool


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("(15 + 7) * 3 - 10", 56),
        ("5*5/5*4+8-8+3*9", 47),  # precedence and left-to-right order
        ("12 / 4", 3),  # ints that divide evenly stay int, as the divide tool
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("7 % 4", 3),
        ("2 ** 10", 1024),
        ("-(-3) + +2", 5),
        ("1.5 * 2", 3.0),
        ("6 × 7 ÷ 2 − 1", 20),  # typographic operators
        ("+".join(["1"] * 499), 499),  # a long sum nests 498 deep: no recursion limit is reached
    ],
)
def test_tool_expr_010_arithmetic_is_computed_exactly(text, value):
    result = calculate_expression(text)
    assert result == value and type(result) is type(value)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("x + 1", "the name 'x' at column 1"),
        ('__import__("os").system("true")', "column 1"),
        ("(1).__class__", "Attribute"),
        ("2 ^ 3", "'^' at column 3: write powers with '**'"),
        ("1,000 + 1", "comma"),
        ("'a' + 'b'", "'a' at column 1 is not a number"),
        ("True + 1", "True at column 1 is not a number"),
        ("1 < 2", "a comparison"),
        ("[1, 2]", "List"),
        ("lambda: 1", "Lambda"),
        ("1 +", "not an arithmetic expression"),
        ("(1 + 2", "not an arithmetic expression at column 1"),
        ("", "empty"),
        ("1 / 0", "division by zero: 1 / 0"),
        ("5 % 0", "division by zero"),
        ("(-8) ** 0.5", "not a real number"),
    ],
)
def test_tool_expr_020_anything_else_is_refused_naming_what_and_where(text, names):
    with pytest.raises(ExpressionError) as caught:
        calculate_expression(text)
    assert names in str(caught.value)
    assert isinstance(caught.value, ValueError)  # tools report ValueErrors to the model


@pytest.mark.parametrize(
    "text",
    [
        "9 ** 9 ** 9",  # would run for hours and exhaust memory
        "10 ** 400 * 1.0",  # float overflow
        "1e308 * 10",  # infinity
        "(" * 300 + "1" + ")" * 300,  # deeper than Python's parser reads
        "-" * 999 + "1",
        "1" * (MAX_LENGTH + 1),
    ],
)
def test_tool_expr_030_no_input_runs_long_or_exhausts_memory(text):
    started = time.perf_counter()
    try:
        value = calculate_expression(text)
    except ExpressionError:
        pass
    else:
        assert abs(value) < 10**1300  # what was accepted is bounded
    assert time.perf_counter() - started < 1.0


def test_tool_expr_040_the_calculate_tool_and_a_bounded_power_tool():
    tool = as_tool(calculate)
    assert EXPRESSION_TOOLS == (calculate,)
    assert tool.json_schema["function"]["parameters"]["required"] == ["expression"]
    assert invoke_tool(tool, {"expression": "(15 + 7) * 3"}).unwrap() == 66
    with pytest.raises(ValueError, match="division by zero"):
        invoke_tool(tool, {"expression": "1 / (2 - 2)"}).unwrap()
    with pytest.raises(ValueError, match="too large"):
        invoke_tool(power, {"base": 9, "exponent": 10**9}).unwrap()
    assert invoke_tool(power, {"base": 2, "exponent": 10}).unwrap() == 1024
