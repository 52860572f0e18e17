"""The default tools every agent gets (TOOL-DEF-*)."""

from datetime import date

import pytest

from llamabot.tools import (
    DEFAULT_TOOLS,
    inspect_globals,
    respond_to_user,
    return_object_to_user,
    today_date,
)
from llamabot.tools.call import invoke_tool

# --- TOOL-DEF-010 ----------------------------------------------------------------------------------


def test_tool_def_010_default_tool_names_are_exactly_the_four_defaults():
    names = [fn.tool.name for fn in DEFAULT_TOOLS]
    assert names == ["respond_to_user", "return_object_to_user", "today_date", "inspect_globals"]
    assert [fn.json_schema["function"]["name"] for fn in DEFAULT_TOOLS] == names


def test_tool_def_010_respond_and_return_object_are_terminal():
    for fn in (respond_to_user, return_object_to_user):
        assert fn.tool.is_terminal is True
        assert fn.loopback_name is None


def test_tool_def_010_today_date_and_inspect_globals_loop_back_to_decide():
    for fn in (today_date, inspect_globals):
        assert fn.tool.is_terminal is False
        assert fn.loopback_name == "decide"


def test_tool_def_010_default_tool_schemas_hide_globals_dict():
    assert set(return_object_to_user.tool.parameters["properties"]) == {"variable_name"}
    assert return_object_to_user.tool.parameters["required"] == ["variable_name"]
    assert inspect_globals.tool.parameters["properties"] == {}
    assert today_date.tool.parameters["properties"] == {}
    assert respond_to_user.tool.parameters["required"] == ["response"]


def test_tool_def_010_respond_to_user_returns_response():
    assert invoke_tool(respond_to_user, '{"response": "hi there"}').unwrap() == "hi there"


# --- TOOL-DEF-020 ----------------------------------------------------------------------------------


def test_tool_def_020_return_object_to_user_returns_object_from_injected_globals():
    payload = {"rows": [1, 2, 3]}
    result = invoke_tool(return_object_to_user,
        {"variable_name": "data"}, context={"globals_dict": {"data": payload}}
    ).unwrap()
    assert result is payload


def test_tool_def_020_return_object_to_user_direct_call_with_globals():
    marker = object()
    assert return_object_to_user("m", _globals_dict={"m": marker}) is marker


def test_tool_def_020_missing_name_raises_key_error_listing_available_names():
    namespace = {"alpha": 1, "beta": 2, "_hidden": 3}
    with pytest.raises(KeyError) as exc_info:
        invoke_tool(return_object_to_user, {"variable_name": "gamma"}, context={"globals_dict": namespace}).unwrap()
    message = exc_info.value.args[0]
    assert "'gamma'" in message
    assert "alpha, beta" in message
    assert "_hidden" not in message


def test_tool_def_020_missing_name_without_globals_says_none_available():
    with pytest.raises(KeyError) as exc_info:
        invoke_tool(return_object_to_user, {"variable_name": "x"}).unwrap()
    assert "(none)" in exc_info.value.args[0]


# --- TOOL-DEF-030 ----------------------------------------------------------------------------------


def test_tool_def_030_today_date_returns_todays_iso_date():
    before = date.today().isoformat()
    result = invoke_tool(today_date).unwrap()
    after = date.today().isoformat()
    assert result in {before, after}
    assert date.fromisoformat(result).isoformat() == result
    assert len(result) == 10


def test_tool_def_030_inspect_globals_lists_names_with_types_sorted():
    namespace = {"numbers": [1, 2], "count": 3, "name": "x"}
    result = invoke_tool(inspect_globals, "", context={"globals_dict": namespace}).unwrap()
    assert result.splitlines() == ["count: int", "name: str", "numbers: list"]


def test_tool_def_030_inspect_globals_skips_underscore_names():
    namespace = {"visible": 1.5, "_private": 1, "__builtins__": {}}
    result = invoke_tool(inspect_globals, None, context={"globals_dict": namespace}).unwrap()
    assert result == "visible: float"
    assert "_private" not in result
    assert "__builtins__" not in result


def test_tool_def_030_inspect_globals_with_no_visible_names_says_so():
    assert (
        invoke_tool(inspect_globals, None, context={"globals_dict": {"_x": 1}}).unwrap()
        == "No variables are available."
    )
    assert invoke_tool(inspect_globals).unwrap() == "No variables are available."
