"""Numbers as users expect from the main job's calculator (issue #15): integer arithmetic prints as integers,
floats stay floats, and each tool accepts ``int | float`` with one clear error for anything else."""

from __future__ import annotations

import pytest

from llamabot.errors import ToolArgumentsError
from llamabot.toolkits.calculator import CALCULATOR_TOOLS, add, divide, multiply, power, subtract
from llamabot.tools.call import invoke_tool


def invoke(tool, arguments):
    return invoke_tool(tool, arguments).unwrap()


def test_mdl_calc_010_integer_arithmetic_answers_are_integers():
    result = invoke(multiply, '{"a": 23, "b": 19}')
    assert result == 437 and type(result) is int and str(result) == "437"
    assert [type(invoke(t, {"a": 6, "b": 3})) for t in (add, subtract, multiply, divide)] == [int] * 4
    assert invoke(divide, {"a": 12, "b": 4}) == 3 and type(invoke(divide, {"a": 12, "b": 4})) is int
    assert type(invoke(power, {"base": 2, "exponent": 10})) is int


def test_mdl_calc_020_floats_stay_floats():
    assert str(invoke(multiply, '{"a": 23.0, "b": 19}')) == "437.0"
    assert invoke(divide, {"a": 1, "b": 4}) == 0.25
    assert invoke(add, {"a": 0.1, "b": 0.2}) == pytest.approx(0.3)
    assert type(invoke(power, {"base": 2, "exponent": -1})) is float


def test_mdl_calc_030_numeric_strings_are_read_as_the_number_they_spell():
    assert str(invoke(add, {"a": "40", "b": 2})) == "42"
    assert str(invoke(add, {"a": " 2.5 ", "b": 1})) == "3.5"


@pytest.mark.parametrize("bad", ["one", True, None, [1], {"x": 1}])
def test_mdl_calc_040_anything_else_is_refused_naming_the_argument(bad):
    with pytest.raises(
        ToolArgumentsError, match=r"invalid arguments for tool 'add': a: Input should be a valid number"
    ):
        invoke(add, {"a": bad, "b": 1})


def test_mdl_calc_050_the_model_sees_plain_numbers_in_the_schema():
    for calculator_tool in CALCULATOR_TOOLS:
        properties = calculator_tool.tool.parameters["properties"]
        assert all(spec["type"] == "number" and "anyOf" not in spec for spec in properties.values()), (
            properties
        )
