"""Schema-first tools (TLS-MCP-2x0): ``schema_tool`` takes a JSON schema as given and checks arguments
against it with jsonschema; the tool runs through the one tool-call logic, sync and async."""

from __future__ import annotations

import asyncio

import pytest

from llamabot import AgentBot, ScriptedModel
from llamabot.errors import ToolArgumentsError, ToolDefinitionError
from llamabot.models.scripted import tool_call
from llamabot.tools import Tool, schema_tool
from llamabot.tools.call import ainvoke_tool, invoke_tool

ORDER = {
    "type": "object",
    "$defs": {
        "Line": {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
                "qty": {"type": "integer", "minimum": 1},
            },
            "required": ["sku", "qty"],
            "additionalProperties": False,
        }
    },
    "properties": {
        "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "minItems": 1},
        "priority": {"enum": ["low", "high"]},
    },
    "required": ["lines"],
}


def total(**arguments):
    return sum(line["qty"] for line in arguments["lines"])


async def atotal(**arguments):
    await asyncio.sleep(0)
    return ("async", total(**arguments))


def order_tool(**options) -> Tool:
    return schema_tool("place_order", "Place an order.", ORDER, **options)


def test_tls_mcp_210_the_schema_is_what_the_model_sees_as_given():
    tool = order_tool(func=total)
    assert tool.json_schema == {
        "type": "function",
        "function": {"name": "place_order", "description": "Place an order.", "parameters": ORDER},
    }
    assert list(tool.arguments.model_fields) == ["lines", "priority"]  # names for AoT's plan checks
    assert (
        tool.arguments.model_fields["lines"].is_required()
        and not tool.arguments.model_fields["priority"].is_required()
    )


def test_tls_mcp_220_arguments_are_checked_against_nested_refs_patterns_and_enums():
    tool = order_tool(func=total)
    assert tool.validate('{"lines": [{"sku": "ABC-1", "qty": 2}]}') == {"lines": [{"sku": "ABC-1", "qty": 2}]}
    with pytest.raises(ToolArgumentsError) as info:
        tool.validate('{"lines": [{"sku": "abc", "qty": 0, "x": 1}], "priority": "urgent"}')
    assert info.value.errors == [
        "lines.0: Additional properties are not allowed ('x' was unexpected)",
        "lines.0.qty: 0 is less than the minimum of 1",
        "lines.0.sku: 'abc' does not match '^[A-Z]{3}-[0-9]+$'",
        "priority: 'urgent' is not one of ['low', 'high']",
    ]
    assert info.value.tool == "place_order"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"lines": [', "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ("{}", "(arguments): 'lines' is a required property"),
        ('{"lines": []}', "lines: [] should be non-empty"),
    ],
)
def test_tls_mcp_220_bad_arguments_are_typed_errors_naming_the_problem(raw, problem):
    with pytest.raises(ToolArgumentsError) as info:
        order_tool(func=total).validate(raw)
    assert problem in str(info.value)


def test_tls_mcp_220_a_huge_argument_is_quoted_as_a_bounded_excerpt():
    with pytest.raises(ToolArgumentsError) as info:
        order_tool(func=total).validate({"lines": [{"sku": "x" * 100_000, "qty": 1}]})
    assert len(str(info.value)) < 2_000


def test_tls_mcp_230_sync_runs_call_func_and_async_runs_await_afunc():
    tool = order_tool(func=total, afunc=atotal)
    arguments = {"lines": [{"sku": "ABC-1", "qty": 2}, {"sku": "XYZ-9", "qty": 3}]}
    assert invoke_tool(tool, arguments).value == 5
    assert asyncio.run(ainvoke_tool(tool, arguments)).value == ("async", 5)
    only_async = order_tool(afunc=atotal)
    assert only_async.is_async and asyncio.run(ainvoke_tool(only_async, arguments)).value == ("async", 5)


def test_tls_mcp_230_timeouts_and_retries_apply_as_to_any_tool():
    calls = []

    def flaky(**arguments):
        calls.append(arguments)
        if len(calls) < 3:
            raise ConnectionError("try again")
        return "ok"

    tool = schema_tool("flaky", "Flaky.", {"type": "object", "properties": {}}, func=flaky, retries=2)
    outcome = invoke_tool(tool, {})
    assert outcome.value == "ok" and outcome.attempts == 3


def test_tls_mcp_230_an_agent_uses_a_schema_first_tool_and_sees_its_argument_errors():
    model = ScriptedModel(
        [
            tool_call("place_order", lines=[{"sku": "ABC-1", "qty": 0}]),
            tool_call("place_order", lines=[{"sku": "ABC-1", "qty": 4}]),
            lambda r: tool_call("respond_to_user", response=r.messages[-1]["content"]),
        ]
    )
    assert AgentBot(tools=[order_tool(func=total)], model=model)("order 4 ABC-1") == "4"
    assert "lines.0.qty: 0 is less than the minimum of 1" in model.requests[1].messages[-1]["content"]


@pytest.mark.parametrize(
    ("name", "parameters", "options", "problem"),
    [
        ("bad name!", ORDER, {"func": total}, "must be 1-64 letters"),
        ("t", [], {"func": total}, "must be a JSON object"),
        ("t", {"type": "string"}, {"func": total}, "must describe an object"),
        (
            "t",
            {"type": "object", "properties": {"a": {"type": "nope"}}},
            {"func": total},
            "invalid parameters schema at properties/a/type",
        ),
        ("t", ORDER, {}, "give func= (sync), afunc= (async) or both"),
        ("t", ORDER, {"func": total, "afunc": total}, "afunc must be a coroutine function"),
        ("t", ORDER, {"func": 3}, "func must be callable"),
        ("t", ORDER, {"func": total, "timeout": -1}, "timeout must be a number of seconds > 0"),
        (
            "t",
            {"type": "object", "properties": {"_meta": {}}},
            {"func": total},
            "cannot list the schema's properties",
        ),
    ],
)
def test_tls_mcp_240_a_schema_or_function_that_cannot_make_a_tool_is_a_typed_error(
    name, parameters, options, problem
):
    with pytest.raises(ToolDefinitionError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        schema_tool(name, "d", parameters, **options)
