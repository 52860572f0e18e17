"""Property test (TOOL-SCHEMA-130): a typed tool validates exactly the well-typed argument dicts."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llamabot.errors import ToolArgumentsError
from llamabot.tools import tool


@tool
def f(a: int, b: str, c: bool) -> str:
    """A tool with one parameter of each scalar type."""
    return f"{a} {b} {c}"


EXPECTED_TYPES = {"a": int, "b": str, "c": bool}

values = st.one_of(st.integers(), st.text(), st.booleans())
keys = st.sampled_from(["a", "b", "c", "d", "extra"])
argument_dicts = st.dictionaries(keys, values, max_size=5)
well_typed_dicts = st.fixed_dictionaries({"a": st.integers(), "b": st.text(), "c": st.booleans()})


def is_well_typed(args: dict) -> bool:
    return set(args) == set(EXPECTED_TYPES) and all(type(args[k]) is t for k, t in EXPECTED_TYPES.items())


@settings(max_examples=300, deadline=None)
@given(well_typed_dicts)
def test_tool_schema_130_well_typed_arguments_round_trip(args):
    validated = f.tool.validate(json.dumps(args))
    assert validated == args
    assert {k: type(v) for k, v in validated.items()} == EXPECTED_TYPES
    assert f.tool.validate(args) == args


@settings(max_examples=500, deadline=None)
@given(argument_dicts)
def test_tool_schema_130_validates_exactly_well_typed_dicts(args):
    raw = json.dumps(args)
    if is_well_typed(args):
        assert f.tool.validate(raw) == args
        return
    if set(args) != set(EXPECTED_TYPES) or type(args["b"]) is not str:
        # Missing or unknown keys, or a non-string for the str parameter: always rejected.
        with pytest.raises(ToolArgumentsError) as exc_info:
            f.tool.validate(raw)
        fields = {message.split(":")[0] for message in exc_info.value.errors}
        expected_bad = (set(args) ^ set(EXPECTED_TYPES)) | (
            {"b"} if "b" in args and type(args["b"]) is not str else set()
        )
        assert expected_bad <= fields
        return
    # Only a or c is mistyped. Pydantic's lax mode may coerce lossless inputs ("3" -> 3, 1 -> True);
    # either the arguments are rejected, or what the function gets is well typed and equal in value.
    try:
        validated = f.tool.validate(raw)
    except ToolArgumentsError as exc:
        assert {message.split(":")[0] for message in exc.errors} <= {"a", "c"}
    else:
        assert {k: type(v) for k, v in validated.items()} == EXPECTED_TYPES
        assert validated["b"] == args["b"]
        if not isinstance(args["a"], str):
            assert validated["a"] == args["a"]
        if not isinstance(args["c"], str):
            assert validated["c"] == args["c"]
