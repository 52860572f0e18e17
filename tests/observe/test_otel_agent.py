"""OpenTelemetry export of agent runs on the scripted model, read back from the SDK's in-memory exporter
(OBS-OTEL-010..080)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel, tool
from llamabot.models.scripted import tool_call
from llamabot.observe.otel import OTelHook
from llamabot.toolkits.calculator import add, divide, multiply
from tests.agent.helpers import add_then_respond

from .helpers import Exported, ops, parent_of

QUESTION = "6*7 then 1/0, secret-question-text"
SCRIPT = [
    tool_call("multiply", a=6, b=7),
    tool_call("divide", a=1, b=0),
    tool_call("respond_to_user", response="42"),
]
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def calculation(exported: Exported, **hook_options) -> AgentBot:
    bot = AgentBot(
        tools=[multiply, divide],
        model=ScriptedModel(list(SCRIPT)),
        hooks=[OTelHook(exported.provider, **hook_options)],
    )
    assert bot(QUESTION) == "42"
    return bot


def test_obs_otel_010_a_run_becomes_an_invoke_agent_span_with_decisions_chats_and_tool_executions():
    exported = Exported()
    calculation(exported)
    spans = exported.spans
    assert ops(spans) == ["invoke_agent", *["decision", "chat", "execute_tool"] * 3]
    root = exported.one("invoke_agent AgentBot")
    assert root.parent is None and root.kind == SpanKind.INTERNAL
    assert root.attributes["gen_ai.agent.name"] == "AgentBot"
    for span in spans:
        assert span.context.trace_id == root.context.trace_id
        parent = parent_of(span, spans)
        if span.name.startswith("chat "):  # a model call nests in its decision
            assert parent.name == "decision" and span.kind == SpanKind.CLIENT
        elif span is not root:  # decisions and tool calls are steps of the run
            assert parent is root
    assert [s.name for s in sorted(exported.spans, key=lambda s: s.start_time) if "tool" in s.name] == [
        "execute_tool multiply",
        "execute_tool divide",
        "execute_tool respond_to_user",
    ]


def test_obs_otel_020_model_calls_carry_the_model_and_the_usage_of_our_trace():
    exported = Exported()
    bot = calculation(exported)
    ours = bot.last_trace.of_kind("model_call")
    chats = sorted(exported.named("chat scripted"), key=lambda s: s.start_time)
    assert len(chats) == len(ours) == 3
    for chat, span in zip(chats, ours, strict=True):
        usage = span.attributes["reply"].usage
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "scripted"
        assert chat.attributes["gen_ai.response.model"] == "scripted"
        assert chat.attributes["gen_ai.usage.input_tokens"] == usage.prompt_tokens > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] == usage.completion_tokens > 0
        assert chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_obs_otel_020_tool_spans_carry_the_tool_name_and_the_model_s_call_id():
    exported = Exported()
    bot = calculation(exported)
    call_ids = [c.id for s in bot.last_trace.of_kind("model_call") for c in s.attributes["reply"].tool_calls]
    tools = sorted(
        (s for s in exported.spans if s.name.startswith("execute_tool")), key=lambda s: s.start_time
    )
    assert [t.attributes["gen_ai.tool.name"] for t in tools] == ["multiply", "divide", "respond_to_user"]
    assert [t.attributes["gen_ai.tool.call.id"] for t in tools] == call_ids and len(set(call_ids)) == 3
    assert all(t.attributes["gen_ai.operation.name"] == "execute_tool" for t in tools)
    assert all(t.attributes["gen_ai.tool.type"] == "function" for t in tools)


def test_obs_otel_030_spans_have_wall_clock_times_and_our_durations():
    exported = Exported()
    before = time.time_ns()
    bot = calculation(exported)
    after = time.time_ns()
    ours = {s.name: s for s in bot.last_trace.spans if s.category == "tool_call"}
    spans = exported.spans
    for span in spans:
        assert before <= span.start_time <= span.end_time <= after
        parent = parent_of(span, spans)
        if parent is not None:
            assert parent.start_time <= span.start_time and span.end_time <= parent.end_time
    for name, span in ours.items():  # the same clock as the trace: durations agree to the nanosecond rounding
        otel = exported.one(f"execute_tool {name}")
        assert abs((otel.end_time - otel.start_time) - span.duration_s * 1e9) <= 2


def test_obs_otel_040_the_run_span_records_our_trace_id_and_steps_their_kind():
    exported = Exported()
    bot = calculation(exported)
    run = exported.one("invoke_agent AgentBot")
    assert run.attributes["llamabot.trace_id"] == bot.last_trace.trace_id
    assert [s for s in exported.spans if "llamabot.trace_id" in s.attributes] == [run]
    steps = [
        s.attributes.get("llamabot.span.kind")
        for s in exported.spans
        if "gen_ai.operation.name" not in s.attributes
    ]
    assert steps == ["decision"] * 3


def test_obs_otel_050_a_failing_tool_is_an_error_span_with_its_error_type():
    exported = Exported()
    calculation(exported)
    failed = exported.one("execute_tool divide")
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["error.type"] == "ZeroDivisionError"
    assert failed.status.description == "ZeroDivisionError"  # the message is content: off by default
    assert exported.one("execute_tool multiply").status.status_code == StatusCode.UNSET
    with_content = Exported()
    calculation(with_content, capture_content=True)
    assert (
        with_content.one("execute_tool divide").status.description
        == "ZeroDivisionError: cannot divide by zero"
    )


def test_obs_otel_050_a_failing_model_call_fails_the_chat_and_the_run_spans():
    exported = Exported()
    bot = AgentBot(
        tools=[add],
        model=ScriptedModel([ConnectionError("provider down")]),
        hooks=[OTelHook(exported.provider)],
    )
    with pytest.raises(Exception, match="provider down"):
        bot("1+1")
    chat, run = exported.one("chat scripted"), exported.one("invoke_agent AgentBot")
    for span in (chat, run, exported.one("decision")):
        assert span.status.status_code == StatusCode.ERROR and span.attributes["error.type"]
    assert "gen_ai.usage.input_tokens" not in chat.attributes


def test_obs_otel_060_message_contents_are_off_by_default():
    exported = Exported()
    calculation(exported)
    for span in exported.spans:
        assert not CONTENT_KEYS & set(span.attributes), span.name
        for value in span.attributes.values():
            assert "secret-question-text" not in str(value) and "You are" not in str(value)
    assert "gen_ai.tool.call.arguments" not in exported.one("execute_tool multiply").attributes


def test_obs_otel_060_contents_are_recorded_when_opted_in():
    exported = Exported()
    calculation(exported, capture_content=True)
    run = exported.one("invoke_agent AgentBot")
    assert json.loads(run.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    ]
    assert json.loads(run.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == "42"
    multiply_span = exported.one("execute_tool multiply")
    assert json.loads(multiply_span.attributes["gen_ai.tool.call.arguments"]) == {"a": 6.0, "b": 7.0}
    assert json.loads(multiply_span.attributes["gen_ai.tool.call.result"]) == 42.0
    first_chat = min(exported.named("chat scripted"), key=lambda s: s.start_time)
    messages = json.loads(first_chat.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in messages] == ["system", "user"] and messages[1]["parts"][0][
        "content"
    ] == QUESTION
    output = json.loads(first_chat.attributes["gen_ai.output.messages"])
    first_id = SCRIPT[0].tool_calls[0].id
    assert output == [
        {
            "role": "assistant",
            "finish_reason": "tool_calls",
            "parts": [
                {"type": "tool_call", "id": first_id, "name": "multiply", "arguments": {"a": 6, "b": 7}}
            ],
        }
    ]


def test_obs_otel_060_contents_follow_the_standard_environment_switch(monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    assert OTelHook(Exported().provider).capture_content is True
    assert OTelHook(Exported().provider, capture_content=False).capture_content is False
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    assert OTelHook(Exported().provider).capture_content is False


async def test_obs_otel_070_concurrent_runs_on_one_bot_keep_separate_span_trees():
    exported = Exported()
    model = ScriptedModel(responder=add_then_respond, latency_s=0.01, strict=False)
    bot = AsyncAgentBot(
        tools=[add], model=model, hooks=[OTelHook(exported.provider, capture_content=True)]
    )
    answers = await asyncio.gather(*(bot.arun(f"add {n} and 1") for n in (10, 20, 30)))
    assert answers == ["11", "21", "31"]
    spans = exported.spans
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 3 and len({r.context.trace_id for r in roots}) == 3
    assert len({r.attributes["llamabot.trace_id"] for r in roots}) == 3
    for root in roots:
        n = json.loads(root.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"].split()[1]
        tree = [s for s in spans if s.context.trace_id == root.context.trace_id]
        assert len(tree) == 7  # the run, two decisions with a chat each, add and respond_to_user
        assert all(parent_of(s, spans) is not None for s in tree if s is not root)
        added = next(s for s in tree if s.name == "execute_tool add")
        assert json.loads(added.attributes["gen_ai.tool.call.arguments"])["a"] == float(n)


def test_obs_otel_070_a_bot_called_inside_a_tool_nests_its_run_under_that_tool_call():
    exported = Exported()
    inner = AgentBot(
        tools=[add],
        model=ScriptedModel([tool_call("add", a=1, b=2), tool_call("respond_to_user", response="3")]),
    )

    @tool
    def delegate(question: str) -> str:
        """Ask the inner agent.

        Args:
            question: What to ask.
        """
        return inner(question)

    outer = AgentBot(
        tools=[delegate],
        model=ScriptedModel(
            [tool_call("delegate", question="1+2"), tool_call("respond_to_user", response="3")]
        ),
        hooks=[OTelHook(exported.provider)],
    )
    assert outer("ask") == "3"
    spans = exported.spans
    runs = sorted(exported.named("invoke_agent AgentBot"), key=lambda s: s.start_time)
    assert len(runs) == 2 and runs[0].parent is None
    assert parent_of(runs[1], spans).name == "execute_tool delegate"
    assert len({s.context.trace_id for s in spans}) == 1
