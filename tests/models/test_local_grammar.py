"""Pure parts of the embedded provider: the grammar schemas and message adaptation, and text tool calls."""

from __future__ import annotations

import json

import pytest

from llamabot.models.local.grammar import (
    forces_tool_call,
    parse_forced_call,
    response_schema,
    selected_tools,
    template_messages,
    tool_call_schema,
)
from llamabot.models.tool_call_text import extract_tool_calls
from llamabot.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper()


TOOLS = [add.json_schema, shout.json_schema]


def test_mdl_local_040_forced_call_schema_is_the_union_of_the_tools_argument_schemas():
    schema = tool_call_schema(TOOLS)
    options = schema["anyOf"]
    assert [o["properties"]["name"] for o in options] == [{"const": "add"}, {"const": "shout"}]
    assert options[0]["properties"]["arguments"]["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert all(o["required"] == ["name", "arguments"] for o in options)


def test_mdl_local_040_a_named_tool_choice_constrains_to_that_tool():
    chosen = selected_tools(TOOLS, {"type": "function", "function": {"name": "shout"}})
    assert tool_call_schema(chosen)["properties"]["name"] == {"const": "shout"}
    with pytest.raises(ValueError, match="nope"):
        selected_tools(TOOLS, {"type": "function", "function": {"name": "nope"}})


def test_mdl_local_040_which_tool_choices_force_a_call():
    assert forces_tool_call(TOOLS, "required")
    assert forces_tool_call(TOOLS, {"type": "function", "function": {"name": "add"}})
    assert not forces_tool_call(TOOLS, "auto")
    assert not forces_tool_call(None, "required")


def test_mdl_local_040_forced_output_parses_into_name_and_arguments():
    assert parse_forced_call('{"name": "add", "arguments": {"a": 1, "b": 2}}') == ("add", '{"a": 1, "b": 2}')


def test_mdl_local_050_response_format_schema_extraction():
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert response_schema({"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}) == schema
    assert response_schema({"type": "json_object"}) == {"type": "object"}
    assert response_schema(None) is None
    with pytest.raises(ValueError, match="unsupported"):
        response_schema({"type": "yaml"})


def test_mdl_local_060_template_messages_turn_tool_arguments_into_objects():
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
    ]
    adapted = template_messages(messages)
    assert adapted[0]["content"] == ""
    assert adapted[0]["tool_calls"][0]["function"]["arguments"] == {"a": 1}
    assert messages[0]["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'  # input left untouched


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
        '```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```',
        '{"name": "add", "arguments": {"a": 1, "b": 2}}',
        '{"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}',
        '{"name": "add", "parameters": {"a": 1, "b": 2}}',
    ],
)
def test_bot_tool_030_tool_calls_written_as_text_are_recognised(text):
    [(name, arguments)] = extract_tool_calls(text, {"add"})
    assert name == "add" and json.loads(arguments) == {"a": 1, "b": 2}


def test_bot_tool_030_json_that_names_no_known_tool_is_not_a_call():
    assert extract_tool_calls('{"name": "Alice", "arguments": {}}', {"add"}) == []
    assert extract_tool_calls("The answer is 42.", {"add"}) == []
    assert extract_tool_calls("", {"add"}) == []


@pytest.mark.parametrize(("text", "redo"), [
    ('{"city": "Lima", "temperature": 21}', False),  # a JSON answer, not a call: kept as the text
    ('  [1, 2]', False),
    ('{"city": "Lima"}', True),  # the arguments of weather(city) written alone
    ("The answer is {x}.", False),
    ('{"name": "weather", "arguments": {"city": 3}}', True),  # a call the model could not write validly
    ('{"function": {"name": "nope"}}', True),
    ('{"name": "weather", "argum', True),  # unfinished
    ("<tool_call>\n{", True),
    ("{" * 5000, True),  # broken, and deep: no RecursionError
])
def test_mdl_local_045_only_text_that_began_a_call_is_redone_as_a_forced_call(text, redo):
    from llamabot.models.local.grammar import begun_call

    weather = {"type": "function", "function": {"name": "weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    assert begun_call(text, [weather]) is redo

