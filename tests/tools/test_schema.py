"""Schema generation from ``@tool``-decorated functions (TOOL-SCHEMA-010 .. TOOL-SCHEMA-120)."""

import dataclasses
import enum
import json
from typing import Any, Literal, Optional

import pytest
from pydantic import BaseModel

from llamabot.errors import ToolDefinitionError
from llamabot.tools import DECIDE, Tool, tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


class Polygon(BaseModel):
    name: str
    vertices: list[Point]


def _params(fn: Any) -> dict[str, Any]:
    return fn.json_schema["function"]["parameters"]


def _walk(node: Any):
    """Yield every dict inside a JSON-like structure."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


# --- TOOL-SCHEMA-010 -------------------------------------------------------------------------------


def test_tool_schema_010_openai_format_has_name_description_parameters():
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    schema = add.json_schema
    assert set(schema) == {"type", "function"}
    assert schema["type"] == "function"
    assert set(schema["function"]) == {"name", "description", "parameters"}
    assert schema["function"]["name"] == "add"
    assert schema["function"]["description"] == "Add two integers."
    assert schema["function"]["parameters"]["type"] == "object"
    assert set(schema["function"]["parameters"]["properties"]) == {"a", "b"}
    # The schema is plain JSON (it can be sent to a provider as is).
    assert json.loads(json.dumps(schema)) == schema


def test_tool_schema_010_decorated_function_stays_plain_callable():
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    decorated = tool(multiply)
    assert decorated is multiply
    assert decorated(6, 7) == 42
    assert decorated(a=2, b=3) == 6


def test_tool_schema_010_decorated_function_has_json_schema_loopback_name_and_tool():
    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    assert isinstance(echo.tool, Tool)
    assert echo.json_schema is echo.tool.json_schema
    assert echo.loopback_name == "decide"
    assert echo.tool.name == "echo"
    assert echo.tool.func is echo
    assert echo.tool.parameters == echo.json_schema["function"]["parameters"]


def test_tool_schema_010_parameters_is_closed_object_without_title_noise():
    @tool
    def place(point: Point, label: str) -> str:
        """Place a point."""
        return label

    params = _params(place)
    assert params["additionalProperties"] is False
    assert all("title" not in node for node in _walk(params))


def test_tool_schema_010_explicit_name_overrides_function_name():
    @tool(name="renamed")
    def original(a: int) -> int:
        """Identity."""
        return a

    assert original.json_schema["function"]["name"] == "renamed"
    assert original.tool.name == "renamed"


# --- TOOL-SCHEMA-020 -------------------------------------------------------------------------------


def test_tool_schema_020_scalar_types_map_to_json_types():
    @tool
    def scalars(i: int, f: float, s: str, b: bool) -> None:
        """Scalars."""

    props = _params(scalars)["properties"]
    assert props["i"]["type"] == "integer"
    assert props["f"]["type"] == "number"
    assert props["s"]["type"] == "string"
    assert props["b"]["type"] == "boolean"


def test_tool_schema_020_required_lists_exactly_params_without_defaults():
    @tool
    def mixed(a: int, b: str, c: bool = False, d: float = 0.5) -> None:
        """Mixed."""

    params = _params(mixed)
    assert params["required"] == ["a", "b"]
    assert set(params["properties"]) == {"a", "b", "c", "d"}


def test_tool_schema_020_no_required_key_when_every_param_has_a_default():
    @tool
    def optional_only(a: int = 1) -> None:
        """Only defaults."""

    assert _params(optional_only).get("required", []) == []


def test_tool_schema_020_function_without_params_has_empty_object_schema():
    @tool
    def nothing() -> str:
        """Nothing."""
        return "ok"

    params = _params(nothing)
    assert params["type"] == "object"
    assert params["properties"] == {}
    assert params.get("required", []) == []


def test_tool_schema_020_return_annotation_is_not_a_parameter():
    @tool
    def returns_model(a: int) -> Point:
        """Make a point."""
        return Point(x=a)

    assert set(_params(returns_model)["properties"]) == {"a"}


# --- TOOL-SCHEMA-030 -------------------------------------------------------------------------------


def test_tool_schema_030_literal_becomes_enum():
    @tool
    def pick(mode: Literal["a", "b"]) -> str:
        """Pick a mode."""
        return mode

    prop = _params(pick)["properties"]["mode"]
    assert prop["enum"] == ["a", "b"]
    assert prop["type"] == "string"


def test_tool_schema_030_enum_subclass_becomes_enum_of_values_inlined():
    @tool
    def paint(color: Color) -> str:
        """Paint."""
        return color.value

    params = _params(paint)
    prop = params["properties"]["color"]
    assert prop["enum"] == ["red", "green", "blue"]
    assert "$ref" not in prop
    assert "$defs" not in params


# --- TOOL-SCHEMA-040 -------------------------------------------------------------------------------


def test_tool_schema_040_list_of_int_has_items_integer():
    @tool
    def total(values: list[int]) -> int:
        """Sum values."""
        return sum(values)

    prop = _params(total)["properties"]["values"]
    assert prop["type"] == "array"
    assert prop["items"] == {"type": "integer"}


def test_tool_schema_040_dict_str_int_is_object_with_integer_values():
    @tool
    def counts(table: dict[str, int]) -> int:
        """Count."""
        return len(table)

    prop = _params(counts)["properties"]["table"]
    assert prop["type"] == "object"
    assert prop["additionalProperties"] == {"type": "integer"}
    assert _params(counts)["required"] == ["table"]


# --- TOOL-SCHEMA-050 -------------------------------------------------------------------------------


def test_tool_schema_050_nested_model_is_inlined_with_properties_and_required():
    @tool
    def move(point: Point) -> str:
        """Move a point."""
        return str(point)

    params = _params(move)
    prop = params["properties"]["point"]
    assert "$ref" not in json.dumps(params)
    assert "$defs" not in params
    assert prop["type"] == "object"
    assert prop["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}}
    assert prop["required"] == ["x"]


def test_tool_schema_050_model_nested_in_list_is_inlined():
    @tool
    def draw(points: list[Point]) -> int:
        """Draw points."""
        return len(points)

    params = _params(draw)
    items = params["properties"]["points"]["items"]
    assert "$ref" not in json.dumps(params)
    assert items["type"] == "object"
    assert set(items["properties"]) == {"x", "y"}
    assert items["required"] == ["x"]


def test_tool_schema_050_model_nested_in_model_is_inlined():
    @tool
    def shape(polygon: Polygon) -> str:
        """Draw a polygon."""
        return polygon.name

    params = _params(shape)
    polygon = params["properties"]["polygon"]
    assert "$ref" not in json.dumps(params)
    assert polygon["required"] == ["name", "vertices"]
    vertex = polygon["properties"]["vertices"]["items"]
    assert vertex["properties"]["x"] == {"type": "integer"}
    assert vertex["required"] == ["x"]


def test_tool_schema_050_documented_model_param_keeps_description_when_inlined():
    @tool
    def locate(point: Point) -> str:
        """Locate a point.

        Args:
            point: Where to look.
        """
        return str(point)

    prop = _params(locate)["properties"]["point"]
    assert "$ref" not in prop
    assert prop["description"] == "Where to look."
    assert set(prop["properties"]) == {"x", "y"}


# --- TOOL-SCHEMA-060 -------------------------------------------------------------------------------


def test_tool_schema_060_optional_int_is_anyof_integer_null_default_null_not_required():
    @tool
    def maybe(limit: Optional[int] = None) -> str:  # noqa: UP045 - the typing.Optional spelling is under test
        """Maybe limit."""
        return str(limit)

    params = _params(maybe)
    prop = params["properties"]["limit"]
    assert {"type": "integer"} in prop["anyOf"]
    assert {"type": "null"} in prop["anyOf"]
    assert len(prop["anyOf"]) == 2
    assert "default" in prop and prop["default"] is None
    assert "limit" not in params.get("required", [])


def test_tool_schema_060_pep604_optional_is_same_as_typing_optional():
    @tool
    def maybe(limit: int | None = None) -> str:
        """Maybe limit."""
        return str(limit)

    prop = _params(maybe)["properties"]["limit"]
    assert sorted(prop["anyOf"], key=json.dumps) == [{"type": "integer"}, {"type": "null"}]
    assert prop["default"] is None


# --- TOOL-SCHEMA-070 -------------------------------------------------------------------------------


def test_tool_schema_070_defaults_are_kept_without_docstring_params():
    @tool
    def scale(x: float, k: float = 1.5, unit: str = "m", flag: bool = True) -> float:
        """Scale."""
        return x * k

    props = _params(scale)["properties"]
    assert props["k"]["default"] == 1.5
    assert props["unit"]["default"] == "m"
    assert props["flag"]["default"] is True
    assert "default" not in props["x"]


def test_tool_schema_070_defaults_are_kept_when_docstring_documents_params():
    @tool
    def scale(x: float, k: float = 1.5, unit: str = "m") -> float:
        """Scale a value.

        Args:
            x: The value.
            k: The factor.
            unit: The unit.
        """
        return x * k

    props = _params(scale)["properties"]
    assert props["k"]["default"] == 1.5
    assert props["k"]["description"] == "The factor."
    assert props["unit"]["default"] == "m"
    assert props["unit"]["description"] == "The unit."
    assert _params(scale)["required"] == ["x"]


@pytest.mark.parametrize(
    "style",
    ["google", "rest", "numpy"],
)
def test_tool_schema_070_defaults_are_kept_for_every_docstring_style(style):
    docs = {
        "google": "Scale.\n\nArgs:\n    k: The factor.\n",
        "rest": "Scale.\n\n:param k: The factor.\n",
        "numpy": "Scale.\n\nParameters\n----------\nk : float\n    The factor.\n",
    }

    def scale(k: float = 1.5) -> float:
        return k

    scale.__doc__ = docs[style]
    tool(scale)
    prop = _params(scale)["properties"]["k"]
    assert prop["default"] == 1.5
    assert prop["description"] == "The factor."


# --- TOOL-SCHEMA-080 -------------------------------------------------------------------------------


def test_tool_schema_080_google_style_param_descriptions():
    @tool
    def search(query: str, limit: int = 10) -> str:
        """Search the index.

        Args:
            query: The text to look for.
            limit: How many hits to return.

        Returns:
            The hits.
        """
        return query

    props = _params(search)["properties"]
    assert props["query"]["description"] == "The text to look for."
    assert props["limit"]["description"] == "How many hits to return."


def test_tool_schema_080_rest_style_param_descriptions():
    @tool
    def search(query: str, limit: int = 10) -> str:
        """Search the index.

        :param query: The text to look for.
        :param limit: How many hits to return.
        :returns: The hits.
        """
        return query

    props = _params(search)["properties"]
    assert props["query"]["description"] == "The text to look for."
    assert props["limit"]["description"] == "How many hits to return."


def test_tool_schema_080_numpy_style_param_descriptions():
    @tool
    def search(query: str, limit: int = 10) -> str:
        """Search the index.

        Parameters
        ----------
        query : str
            The text to look for.
        limit : int
            How many hits to return.

        Returns
        -------
        str
            The hits.
        """
        return query

    props = _params(search)["properties"]
    assert props["query"]["description"] == "The text to look for."
    assert props["limit"]["description"] == "How many hits to return."


def test_tool_schema_080_description_is_docstring_summary_without_param_section():
    @tool
    def search(query: str) -> str:
        """Search the index.

        Args:
            query: The text to look for.
        """
        return query

    description = search.json_schema["function"]["description"]
    assert description == "Search the index."
    assert search.tool.description == description


def test_tool_schema_080_undocumented_param_has_no_description():
    @tool
    def search(query: str, limit: int = 10) -> str:
        """Search the index.

        Args:
            query: The text to look for.
        """
        return query

    props = _params(search)["properties"]
    assert props["query"]["description"] == "The text to look for."
    assert "description" not in props["limit"]


def test_tool_schema_080_missing_docstring_falls_back_to_readable_name():
    @tool
    def look_up_weather(city: str) -> str:
        return city

    assert look_up_weather.json_schema["function"]["description"] == "look up weather"
    assert "description" not in _params(look_up_weather)["properties"]["city"]


# --- TOOL-SCHEMA-090 -------------------------------------------------------------------------------


def test_tool_schema_090_missing_annotation_raises_tool_definition_error_naming_param():
    def untyped(city: str, days) -> str:  # the missing annotation is under test
        """Forecast."""
        return city

    with pytest.raises(ToolDefinitionError) as exc_info:
        tool(untyped)
    message = str(exc_info.value)
    assert "'days'" in message
    assert "untyped" in message
    assert not hasattr(untyped, "tool")


def test_tool_schema_090_missing_annotation_raises_at_decoration_time_with_loopback_form():
    with pytest.raises(ToolDefinitionError, match="'value'"):

        @tool(loopback_name=None)
        def finish(value) -> str:
            """Finish."""
            return value


def test_tool_schema_090_var_positional_args_rejected():
    def spread(*args: int) -> int:
        """Spread."""
        return sum(args)

    with pytest.raises(ToolDefinitionError, match="'args'"):
        tool(spread)


def test_tool_schema_090_var_keyword_kwargs_rejected():
    def options(name: str, **kwargs: str) -> str:
        """Options."""
        return name

    with pytest.raises(ToolDefinitionError, match="'kwargs'"):
        tool(options)


def test_tool_schema_090_tool_definition_error_is_a_type_error():
    def untyped(x) -> None:
        """Untyped."""

    with pytest.raises(TypeError):
        tool(untyped)


def test_tool_schema_090_unresolvable_annotation_raises_tool_definition_error():
    def forward(x: "DoesNotExist") -> None:  # noqa: F821 - unresolved on purpose
        """Forward."""

    with pytest.raises(ToolDefinitionError, match="forward"):
        tool(forward)


# --- TOOL-SCHEMA-100 -------------------------------------------------------------------------------


def test_tool_schema_100_underscore_params_are_hidden_from_properties_and_required():
    @tool
    def lookup(name: str, _globals_dict: dict[str, Any], _secret: int = 0) -> str:
        """Look up a name."""
        return name

    params = _params(lookup)
    assert set(params["properties"]) == {"name"}
    assert params["required"] == ["name"]
    assert "_globals_dict" not in json.dumps(params)
    assert "_secret" not in json.dumps(params)
    assert lookup.tool.hidden == ("_globals_dict", "_secret")


def test_tool_schema_100_hidden_params_need_no_annotation():
    @tool
    def lookup(name: str, _context=None) -> str:  # hidden parameters may be untyped
        """Look up a name."""
        return name

    assert set(_params(lookup)["properties"]) == {"name"}
    assert lookup.tool.hidden == ("_context",)


# --- TOOL-SCHEMA-110 -------------------------------------------------------------------------------


def test_tool_schema_110_default_loopback_name_is_decide():
    @tool
    def step(x: int) -> int:
        """Step."""
        return x

    assert DECIDE == "decide"
    assert step.loopback_name == "decide"
    assert step.tool.loopback_name == "decide"
    assert step.tool.is_terminal is False


def test_tool_schema_110_bare_call_form_also_defaults_to_decide():
    @tool()
    def step(x: int) -> int:
        """Step."""
        return x

    assert step.loopback_name == "decide"
    assert step.tool.is_terminal is False


def test_tool_schema_110_loopback_name_none_makes_terminal_tool():
    @tool(loopback_name=None)
    def finish(answer: str) -> str:
        """Finish."""
        return answer

    assert finish.loopback_name is None
    assert finish.tool.loopback_name is None
    assert finish.tool.is_terminal is True
    assert finish("done") == "done"


def test_tool_schema_110_custom_loopback_name_is_kept():
    @tool(loopback_name="review")
    def draft(text: str) -> str:
        """Draft."""
        return text

    assert draft.loopback_name == "review"
    assert draft.tool.is_terminal is False


# --- TOOL-SCHEMA-120 -------------------------------------------------------------------------------


def _make_first():
    @tool
    def lookup(city: str) -> str:
        """Look up a city."""
        return city

    return lookup


def _make_second():
    @tool(loopback_name=None)
    def lookup(count: int, exact: bool = False) -> int:
        """Count things."""
        return count

    return lookup


def test_tool_schema_120_same_named_tools_in_different_scopes_are_independent():
    first = _make_first()
    first_schema = json.loads(json.dumps(first.json_schema))
    second = _make_second()

    assert first.tool.name == second.tool.name == "lookup"
    assert first.json_schema == first_schema  # building the second did not touch the first
    assert set(_params(first)["properties"]) == {"city"}
    assert set(_params(second)["properties"]) == {"count", "exact"}
    assert first.json_schema["function"]["description"] == "Look up a city."
    assert second.json_schema["function"]["description"] == "Count things."
    assert first.loopback_name == "decide" and second.loopback_name is None
    assert first.tool.arguments is not second.tool.arguments
    assert first.tool.validate({"city": "Paris"}) == {"city": "Paris"}
    assert second.tool.validate({"count": 2}) == {"count": 2, "exact": False}


def test_tool_schema_120_mutating_one_schema_does_not_affect_another_tool():
    first = _make_first()
    other = _make_first()
    assert first.json_schema == other.json_schema
    first.json_schema["function"]["parameters"]["properties"]["city"]["type"] = "integer"
    assert _params(other)["properties"]["city"]["type"] == "string"


def test_tool_schema_120_tool_is_frozen_dataclass():
    first = _make_first()
    description = first.tool
    assert dataclasses.is_dataclass(description)
    with pytest.raises(dataclasses.FrozenInstanceError):
        description.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        description.loopback_name = None  # type: ignore[misc]
    assert description.name == "lookup"
    assert description.loopback_name == "decide"
