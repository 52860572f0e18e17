"""SimpleBot, StructuredBot (repair loop) and ToolBot (message building, parsing), sync and async twins."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel

from llamabot import AsyncSimpleBot, AsyncStructuredBot, AsyncToolBot, SimpleBot, StructuredBot, ToolBot, tool
from llamabot.bot.toolbot import OLLAMA_TOOL_REMINDER
from llamabot.errors import ModelCallError, StructuredOutputError
from llamabot.models.exchange import run_exchange
from llamabot.models.messages import tool_result
from llamabot.models.scripted import (
    ScriptedModel,
    empty,
    json_reply,
    malformed_tool_call,
    text,
    tool_call,
    tool_calls,
)


class Person(BaseModel):
    name: str
    age: int
    role: Literal["dev", "ops"] = "dev"


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key


# -- SimpleBot -------------------------------------------------------------------------------------


def test_bot_simple_010_sends_system_prompt_then_user_messages_and_returns_the_text():
    model = ScriptedModel(["Bonjour"])
    reply = SimpleBot("Be brief.", model=model, temperature=0.1)("Say hello", "in French")
    assert str(reply) == "Bonjour"
    sent = model.requests[0]
    assert sent.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
        {"role": "user", "content": "in French"},
    ]
    assert sent.params == {"temperature": 0.1}


def test_bot_simple_020_empty_reply_is_a_typed_error():
    with pytest.raises(ModelCallError, match="empty reply"):
        SimpleBot("s", model=ScriptedModel([empty()]))("hi")


def test_bot_simple_030_streams_to_the_target_and_keeps_a_trace():
    pieces: list[str] = []
    bot = SimpleBot("s", model=ScriptedModel(["a b c"]), stream_target=pieces.append)
    assert str(bot("hi")) == "a b c" and "".join(pieces) == "a b c"
    assert [s.kind for s in bot.last_trace.spans] == ["run", "model_call"]


async def test_bot_simple_040_async_twin_gives_the_same_answer():
    model = ScriptedModel(["same"])
    assert str(await AsyncSimpleBot("s", model=model)("hi")) == "same"


# -- StructuredBot ----------------------------------------------------------------------------------


def test_bot_struct_010_returns_a_validated_instance_and_asks_for_the_schema():
    model = ScriptedModel([json_reply({"name": "Ada", "age": 36})])
    person = StructuredBot("Extract.", Person, model=model)("Ada is 36")
    assert person == Person(name="Ada", age=36)
    fmt = model.requests[0].response_format
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"]["required"] == ["name", "age"]


def test_bot_struct_020_invalid_output_is_sent_back_with_the_errors():
    model = ScriptedModel([text('{"name": "Ada", "age": "old"}'), json_reply({"name": "Ada", "age": 36})])
    assert StructuredBot("Extract.", Person, model=model)("Ada is 36").age == 36
    repair = model.requests[1].messages
    assert repair[-2] == {"role": "assistant", "content": '{"name": "Ada", "age": "old"}'}
    assert "age" in repair[-1]["content"] and "valid integer" in repair[-1]["content"]


def test_bot_struct_030_gives_up_after_bounded_repairs_with_the_last_raw_output():
    model = ScriptedModel(["not json", "{}", '{"name": 1}'])
    with pytest.raises(StructuredOutputError) as info:
        StructuredBot("Extract.", Person, model=model, max_repairs=2)("x")
    assert info.value.attempts == 3 and info.value.raw_output == '{"name": 1}'
    assert any("age" in e for e in info.value.errors)
    assert len(model.requests) == 3


def test_bot_struct_040_fenced_json_and_empty_replies():
    model = ScriptedModel([empty(), text('Here:\n```json\n{"name": "Bo", "age": 2}\n```')])
    assert StructuredBot("Extract.", Person, model=model)("x").name == "Bo"
    assert "empty" in model.requests[1].messages[-1]["content"]


async def test_bot_struct_050_async_twin_repairs_too():
    model = ScriptedModel(['{"name": "Ada"}', json_reply({"name": "Ada", "age": 1, "role": "ops"})])
    person = await AsyncStructuredBot("Extract.", Person, model=model)("x")
    assert person.role == "ops" and len(model.requests) == 2


# -- ToolBot ----------------------------------------------------------------------------------------


def test_bot_tool_010_offers_tool_schemas_and_requires_a_call_by_default():
    model = ScriptedModel([tool_call("add", a=1, b=2)])
    reply = ToolBot("Pick a tool.", model=model, tools=[add, lookup])("What is 1+2?")
    sent = model.requests[0]
    assert sent.tool_choice == "required"
    assert [t["function"]["name"] for t in sent.tools] == ["add", "lookup"]
    assert sent.messages[0] == {"role": "system", "content": "Pick a tool."}
    [call] = reply.tool_calls
    assert (call.name, call.arguments, call.ok) == ("add", {"a": 1, "b": 2}, True)


def test_bot_tool_020_builds_proper_chat_messages_with_tool_calls_and_tool_results():
    model = ScriptedModel([tool_call("add", a=1, b=2), tool_call("lookup", key="3")])
    bot = ToolBot("Pick a tool.", model=model, tools=[add, lookup])
    memory: list = ["What is 1+2?"]
    first = bot(*memory)
    memory += [first.message, tool_result(first.first.id, "add", add(**first.first.arguments))]
    bot(*memory)
    sent = model.requests[1].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["function"] == {"name": "add", "arguments": json.dumps({"a": 1, "b": 2})}
    assert sent[3] == {"role": "tool", "tool_call_id": first.first.id, "name": "add", "content": "3"}


def test_bot_tool_030_a_call_written_as_json_text_is_recognised_and_gets_an_id():
    model = ScriptedModel([text('<tool_call>{"name": "add", "arguments": {"a": 2, "b": 2}}</tool_call>')])
    reply = ToolBot("s", model=model, tools=[add])("2+2?")
    assert reply.from_text and reply.content is None
    assert reply.first.arguments == {"a": 2, "b": 2}
    assert reply.message["tool_calls"][0]["id"] == reply.first.id


def test_bot_tool_030_calls_written_as_text_get_ids_no_other_reply_repeats():
    # an id names one call in the conversation: its result, its approval decision (a repeated one confused both)
    call = '{"name": "add", "arguments": {"a": 2, "b": 2}}'
    model = ScriptedModel([text(call), text(f"[{call}, {call}]")])
    bot = ToolBot("s", model=model, tools=[add])
    ids = [c.id for reply in (bot("2+2?"), bot("again, twice")) for c in reply.tool_calls]
    assert len(ids) == len(set(ids)) == 3


def test_bot_tool_090_two_different_tools_of_one_name_are_an_error_not_one_dropped():
    def make(result: str):
        @tool(name="search")
        def search(q: str) -> str:
            """Search."""
            return result
        return search

    with pytest.raises(TypeError, match="two different tools are named 'search'"):
        ToolBot("s", model=ScriptedModel(), tools=[make("a"), make("b")])
    assert list(ToolBot("s", model=ScriptedModel(), tools=[add, add]).tools) == ["add"]  # the same tool twice
    from llamabot.reasoning.aot import AoTBot

    with pytest.raises(TypeError, match="two different tools are named 'search'"):
        AoTBot([make("a"), make("b")], model=ScriptedModel())
    with pytest.raises(TypeError, match="two different tools are named 'search'"):
        AoTBot([add], decisions=[make("a"), make("b")], model=ScriptedModel())


def test_bot_tool_040_unknown_tool_is_reported_not_raised():
    reply = ToolBot("s", model=ScriptedModel([tool_call("delete_everything")]), tools=[add])("x")
    assert not reply.first.ok and "unknown tool 'delete_everything'" in reply.first.error
    assert "add" in reply.first.error  # the model is told what exists


def test_bot_tool_050_invalid_arguments_are_reported_with_tool_and_raw_text():
    model = ScriptedModel([malformed_tool_call("add", '{"a": 1,'), tool_call("add", a="x", b=1)])
    bot = ToolBot("s", model=model, tools=[add])
    broken = bot("x").first
    assert broken.arguments is None and "not valid JSON" in broken.error and '{"a": 1,' in broken.error
    wrong = bot("x").first
    assert "a: Input should be a valid integer" in wrong.error


def test_bot_tool_060_several_calls_in_one_reply_are_all_returned():
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 1}), ("lookup", {"key": "k"}))])
    reply = ToolBot("s", model=model, tools=[add, lookup])("x")
    assert [c.name for c in reply.tool_calls] == ["add", "lookup"]
    assert len(reply.message["tool_calls"]) == 2


def test_bot_tool_070_ollama_models_get_auto_choice_and_a_reminder():
    bot = ToolBot("Pick.", model="ollama_chat/qwen2.5", tools=[add])
    assert bot.tool_choice == "auto" and bot.system_prompt == "Pick." + OLLAMA_TOOL_REMINDER
    assert ToolBot("Pick.", model="local/qwen2.5-coder-1.5b", tools=[add]).tool_choice == "required"


def test_bot_tool_080_a_named_tool_choice_forces_that_tool():
    model = ScriptedModel([tool_call("lookup", key="k")])
    ToolBot("s", model=model, tools=[add, lookup], tool_choice="lookup")("x")
    assert model.requests[0].tool_choice == {"type": "function", "function": {"name": "lookup"}}
    with pytest.raises(ValueError, match="tool_choice"):
        ToolBot("s", model=model, tools=[add], tool_choice="nope")


def test_bot_tool_090_rejects_undecorated_functions():
    def plain(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="@tool"):
        ToolBot("s", model=ScriptedModel(), tools=[plain])


async def test_bot_tool_100_async_twin_parses_the_same_way():
    model = ScriptedModel([tool_call("add", a=5, b=6)])
    reply = await AsyncToolBot("s", model=model, tools=[add])("x")
    assert reply.first.arguments == {"a": 5, "b": 6}


def test_bot_exchange_is_the_public_generator_both_drivers_run():
    class Answer(BaseModel):
        value: int

    model = ScriptedModel([json_reply({"value": "x"}), json_reply({"value": 3})])
    bot = StructuredBot("sys", Answer, model=model)
    assert run_exchange(bot.exchange("what?"), model) == Answer(value=3)  # the repair loop ran inside
    assert len(model.requests) == 2
