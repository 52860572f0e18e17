"""Argument validation and invocation: ``Tool.validate``, ``bind``, ``invoke``, ``ainvoke`` (TOOL-ARGS-*)."""

import asyncio
import enum
import gc
import json
import warnings
from typing import Any

import pytest
from pydantic import BaseModel

from llamabot.errors import ToolArgumentsError, ToolDefinitionError
from llamabot.tools import tool
from llamabot.tools.call import ainvoke_tool, invoke_tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(BaseModel):
    x: int
    y: int = 0


@tool
def describe(
    count: int, color: Color, point: Point, ratio: float = 0.5, tags: list[str] | None = None
) -> str:
    """Describe things."""
    return f"{count} {color.value} ({point.x},{point.y}) {ratio} {tags}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def lookup(name: str, _globals_dict: dict[str, Any] | None = None) -> Any:
    """Look up a variable."""
    return (_globals_dict or {}).get(name, "<missing>")


@tool
def ping() -> str:
    """Ping."""
    return "pong"


@tool
async def slow_add(a: int, b: int) -> int:
    """Add, asynchronously."""
    await asyncio.sleep(0)
    return a + b


# --- TOOL-ARGS-010 ---------------------------------------------------------------------------------


def test_tool_args_010_json_string_arguments_are_parsed_and_validated():
    assert add.tool.validate('{"a": 1, "b": 2}') == {"a": 1, "b": 2}


def test_tool_args_010_dict_arguments_are_validated():
    assert add.tool.validate({"a": 1, "b": 2}) == {"a": 1, "b": 2}


def test_tool_args_010_numeric_string_is_converted_to_int():
    kwargs = add.tool.validate({"a": "3", "b": 4})
    assert kwargs == {"a": 3, "b": 4}
    assert type(kwargs["a"]) is int


def test_tool_args_010_enum_value_becomes_enum_member():
    kwargs = describe.tool.validate({"count": 1, "color": "green", "point": {"x": 1}})
    assert kwargs["color"] is Color.GREEN


def test_tool_args_010_nested_dict_becomes_model_instance():
    kwargs = describe.tool.validate('{"count": 1, "color": "red", "point": {"x": "2", "y": 5}}')
    assert isinstance(kwargs["point"], Point)
    assert kwargs["point"] == Point(x=2, y=5)


def test_tool_args_010_missing_optional_arguments_get_their_defaults():
    kwargs = describe.tool.validate({"count": 1, "color": "red", "point": {"x": 0}})
    assert kwargs["ratio"] == 0.5
    assert kwargs["tags"] is None
    assert set(kwargs) == {"count", "color", "point", "ratio", "tags"}


def test_tool_args_010_invoke_calls_function_with_converted_arguments():
    result = invoke_tool(describe, '{"count": "7", "color": "red", "point": {"x": 3}, "tags": ["a"]}').unwrap()
    assert result == "7 red (3,0) 0.5 ['a']"


@pytest.mark.parametrize("raw", [
    '{"count": 3, "color": "red", "point": {"x": 1}}',
    '{"count": "7", "color": "green", "point": {"x": 1, "y": 2}, "ratio": 2, "tags": ["a", "b"]}',
    '{"count": 1, "color": "red", "point": {"x": "4"}, "tags": null}',
])
def test_tool_args_015_the_fields_validator_gives_what_the_model_gives(raw):
    """Valid JSON arguments are validated by the model's fields alone (no model object made): the same keyword
    arguments, types, enum members, nested models and defaults as the model's own validation."""
    the_tool = describe.tool
    assert the_tool.fields is not None
    fast = the_tool.validate(raw)
    assert fast == dict(the_tool.arguments.model_validate_json(raw).__dict__)
    assert isinstance(fast["color"], Color) and isinstance(fast["point"], Point)
    assert [type(v) for v in fast.values()] == [type(v) for v in the_tool.validate(json.loads(raw)).values()]


def test_tool_args_015_a_model_the_fields_validator_cannot_stand_for_keeps_its_own_validation():
    from pydantic import model_validator

    from llamabot.tools.schema import fields_validator

    class Checked(BaseModel):
        a: int

        @model_validator(mode="after")
        def positive(self):
            if self.a < 0:
                raise ValueError("a must be positive")
            return self

    assert fields_validator(Checked) is None  # its model validator would be skipped
    assert fields_validator(add.tool.arguments) is not None


# --- TOOL-ARGS-020 ---------------------------------------------------------------------------------


def test_tool_args_020_malformed_json_raises_tool_arguments_error_with_tool_and_raw_text():
    raw = '{"a": 1, "b": '
    with pytest.raises(ToolArgumentsError) as exc_info:
        add.tool.validate(raw)
    error = exc_info.value
    assert error.tool == "add"
    assert error.raw_arguments == raw
    assert "'add'" in str(error)
    assert raw in str(error)
    assert any("not valid JSON" in message for message in error.errors)


def test_tool_args_020_malformed_json_via_invoke_does_not_call_function():
    calls = []

    @tool
    def record(a: int) -> None:
        """Record."""
        calls.append(a)

    with pytest.raises(ToolArgumentsError):
        invoke_tool(record, "{a: 1}").unwrap()
    assert calls == []


def test_tool_args_020_tool_arguments_error_is_a_value_error():
    with pytest.raises(ValueError):
        add.tool.validate("not json")


@pytest.mark.parametrize("raw", ["[1, 2]", '"text"', "42", "null"])
def test_tool_args_020_json_that_is_not_an_object_is_rejected(raw):
    with pytest.raises(ToolArgumentsError) as exc_info:
        add.tool.validate(raw)
    assert exc_info.value.raw_arguments == raw
    assert any("JSON object" in message for message in exc_info.value.errors)


# --- TOOL-ARGS-030 ---------------------------------------------------------------------------------


def test_tool_args_030_wrong_type_is_listed_by_field_name():
    with pytest.raises(ToolArgumentsError) as exc_info:
        add.tool.validate({"a": "three", "b": 2})
    errors = exc_info.value.errors
    assert len(errors) == 1
    assert errors[0].startswith("a:")
    assert "integer" in errors[0]


def test_tool_args_030_wrong_nested_type_is_listed_with_dotted_path():
    with pytest.raises(ToolArgumentsError) as exc_info:
        describe.tool.validate({"count": 1, "color": "red", "point": {"x": "far"}})
    assert any(message.startswith("point.x:") for message in exc_info.value.errors)


def test_tool_args_030_invalid_enum_value_is_listed_by_field_name():
    with pytest.raises(ToolArgumentsError) as exc_info:
        describe.tool.validate({"count": 1, "color": "purple", "point": {"x": 1}})
    assert [m.split(":")[0] for m in exc_info.value.errors] == ["color"]


def test_tool_args_030_missing_required_argument_is_listed_by_field_name():
    with pytest.raises(ToolArgumentsError) as exc_info:
        add.tool.validate({"a": 1})
    errors = exc_info.value.errors
    assert len(errors) == 1
    assert errors[0].startswith("b:")
    assert "required" in errors[0].lower()


def test_tool_args_030_extra_unknown_argument_is_listed_by_field_name():
    with pytest.raises(ToolArgumentsError) as exc_info:
        add.tool.validate({"a": 1, "b": 2, "c": 3})
    errors = exc_info.value.errors
    assert len(errors) == 1
    assert errors[0].startswith("c:")
    assert "extra" in errors[0].lower()


def test_tool_args_030_every_problem_is_listed():
    with pytest.raises(ToolArgumentsError) as exc_info:
        add.tool.validate({"a": "x", "zzz": 1})
    fields = sorted(message.split(":")[0] for message in exc_info.value.errors)
    assert fields == ["a", "b", "zzz"]
    for field in fields:
        assert field in str(exc_info.value)


# --- TOOL-ARGS-040 ---------------------------------------------------------------------------------


def test_tool_args_040_bind_injects_globals_dict_from_context():
    namespace = {"x": 41}
    kwargs = lookup.tool.bind({"name": "x"}, context={"globals_dict": namespace})
    assert kwargs == {"name": "x", "_globals_dict": namespace}
    assert kwargs["_globals_dict"] is namespace


def test_tool_args_040_invoke_injects_globals_dict_from_context():
    assert invoke_tool(lookup, '{"name": "x"}', context={"globals_dict": {"x": 41}}).unwrap() == 41


def test_tool_args_040_without_context_hidden_param_keeps_its_default():
    assert lookup.tool.bind({"name": "x"}) == {"name": "x"}
    assert invoke_tool(lookup, {"name": "x"}).unwrap() == "<missing>"


def test_tool_args_040_unrelated_context_keys_are_not_injected():
    kwargs = add.tool.bind({"a": 1, "b": 2}, context={"globals_dict": {"a": 100}, "other": 1})
    assert kwargs == {"a": 1, "b": 2}


def test_tool_args_040_model_cannot_set_hidden_globals_dict():
    with pytest.raises(ToolArgumentsError) as exc_info:
        invoke_tool(lookup,
            {"name": "x", "_globals_dict": {"x": "forged"}}, context={"globals_dict": {"x": 1}}
        ).unwrap()
    errors = exc_info.value.errors
    assert any(message.startswith("_globals_dict:") for message in errors)
    assert any("extra" in message.lower() for message in errors)


# --- TOOL-ARGS-050 ---------------------------------------------------------------------------------


async def test_tool_args_050_async_tool_runs_via_ainvoke():
    assert slow_add.tool.is_async is True
    assert (await ainvoke_tool(slow_add, '{"a": 2, "b": "3"}')).unwrap() == 5


async def test_tool_args_050_ainvoke_also_runs_sync_tools():
    assert add.tool.is_async is False
    assert (await ainvoke_tool(add, {"a": 2, "b": 3})).unwrap() == 5


async def test_tool_args_050_ainvoke_validates_arguments():
    with pytest.raises(ToolArgumentsError):
        (await ainvoke_tool(slow_add, {"a": 2})).unwrap()


async def test_tool_args_050_ainvoke_injects_hidden_context():
    @tool
    async def alookup(name: str, _globals_dict: dict[str, Any] | None = None) -> Any:
        """Look up, asynchronously."""
        return (_globals_dict or {})[name]

    assert (await ainvoke_tool(alookup, {"name": "k"}, context={"globals_dict": {"k": "v"}})).unwrap() == "v"


def test_tool_args_050_invoke_on_async_tool_raises_tool_definition_error():
    with pytest.raises(ToolDefinitionError) as exc_info:
        invoke_tool(slow_add, {"a": 1, "b": 2}).unwrap()
    assert "slow_add" in str(exc_info.value)
    assert "ainvoke" in str(exc_info.value)


def test_tool_args_050_invoke_on_async_tool_leaves_no_unawaited_coroutine():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ToolDefinitionError):
            invoke_tool(slow_add, {"a": 1, "b": 2}).unwrap()
        gc.collect()
    never_awaited = [w for w in caught if "never awaited" in str(w.message)]
    assert never_awaited == []


# --- TOOL-ARGS-060 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", ["", "   ", None, "{}", {}])
def test_tool_args_060_empty_arguments_mean_no_arguments(arguments):
    assert ping.tool.validate(arguments) == {}
    assert invoke_tool(ping, arguments).unwrap() == "pong"


def test_tool_args_060_invoke_without_arguments_runs_parameterless_tool():
    assert invoke_tool(ping).unwrap() == "pong"


def test_tool_args_060_empty_arguments_still_require_required_params():
    with pytest.raises(ToolArgumentsError) as exc_info:
        add.tool.validate("")
    assert sorted(m.split(":")[0] for m in exc_info.value.errors) == ["a", "b"]


def test_tool_args_060_empty_arguments_fill_in_defaults():
    @tool
    def greet(name: str = "world") -> str:
        """Greet."""
        return f"hello {name}"

    assert greet.tool.validate(None) == {"name": "world"}
    assert invoke_tool(greet, "").unwrap() == "hello world"
    assert json.loads(json.dumps(greet.tool.validate("  "))) == {"name": "world"}


def test_tool_args_070_a_required_hidden_parameter_missing_from_the_context_is_a_clear_error():
    from llamabot.errors import ToolDefinitionError
    from llamabot.tools import tool as make_tool

    @make_tool
    def needs_session(x: int, _session: dict) -> int:
        """Uses a session."""
        return x + len(_session)

    assert invoke_tool(needs_session, {"x": 1}, context={"session": {"a": 1}}).unwrap() == 2
    with pytest.raises(ToolDefinitionError, match="_session"):
        invoke_tool(needs_session, {"x": 1}, context={"globals_dict": {}}).unwrap()
