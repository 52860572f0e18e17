"""The scripted model: queued replies, recorded requests, latency, errors, malformed output, replay."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pickle
import time

import pytest

from llamabot.errors import ScriptedModelExhausted
from llamabot.models.reply import ModelReply, ModelRequest, Usage
from llamabot.models.scripted import (
    ScriptedModel,
    delayed,
    empty,
    json_reply,
    malformed_tool_call,
    text,
    tool_call,
    tool_calls,
)
from llamabot.models.seam import call_model
from llamabot.observe.tracing import Trace, capture


def request(content: str = "hi") -> ModelRequest:
    return ModelRequest(model="scripted", messages=[{"role": "user", "content": content}])


def test_mdl_script_010_answers_queued_replies_in_order():
    model = ScriptedModel([text("one"), json_reply({"n": 2}), tool_call("add", a=1, b=2), "plain string"])
    assert model.complete(request()).content == "one"
    assert json.loads(model.complete(request()).content) == {"n": 2}
    call = model.complete(request()).tool_calls[0]
    assert (call.name, json.loads(call.arguments)) == ("add", {"a": 1, "b": 2})
    assert model.complete(request()).content == "plain string"
    assert model.remaining == 0


def test_mdl_script_010_several_tool_calls_in_one_reply_have_distinct_ids():
    reply = ScriptedModel([tool_calls(("a", {}), ("b", {"x": 1}))]).complete(request())
    assert [c.name for c in reply.tool_calls] == ["a", "b"]
    assert reply.tool_calls[0].id != reply.tool_calls[1].id


def test_mdl_script_020_records_every_request_for_assertions():
    model = ScriptedModel(["a", "b"])
    model.complete(request("first"))
    model.complete(request("second"))
    assert [r.last_user_text for r in model.requests] == ["first", "second"]


def test_mdl_script_030_simulates_latency_sync_and_async():
    model = ScriptedModel(["a", delayed("b", 0.05)], latency_s=0.02)
    started = time.perf_counter()
    assert model.complete(request()).latency_s == pytest.approx(0.02)
    assert model.complete(request()).latency_s == pytest.approx(0.05)
    assert time.perf_counter() - started >= 0.07

    async def concurrent():
        m = ScriptedModel(responder=lambda r: "x", latency_s=0.05)
        t0 = time.perf_counter()
        await asyncio.gather(*(m.acomplete(request()) for _ in range(20)))
        return time.perf_counter() - t0

    assert asyncio.run(concurrent()) < 0.5  # 20 concurrent calls overlap instead of taking 1 s


def test_mdl_script_040_raises_queued_errors():
    model = ScriptedModel([TimeoutError("provider timed out"), "after"])
    with pytest.raises(TimeoutError, match="provider timed out"):
        model.complete(request())
    assert model.complete(request()).content == "after"


def test_mdl_script_050_produces_malformed_and_empty_output():
    model = ScriptedModel([malformed_tool_call("add", '{"a": 1,'), empty(), text("{not json")])
    assert model.complete(request()).tool_calls[0].arguments == '{"a": 1,'
    reply = model.complete(request())
    assert reply.content is None and reply.tool_calls == ()
    assert model.complete(request()).content == "{not json"


def test_mdl_script_060_exhausted_queue_raises_typed_error_naming_the_request():
    model = ScriptedModel(["only"])
    model.complete(request())
    with pytest.raises(ScriptedModelExhausted, match="request #2"):
        model.complete(request("second question"))


def test_mdl_script_070_responder_answers_from_the_request():
    model = ScriptedModel(responder=lambda r: f"echo: {r.last_user_text}")
    assert model.complete(request("ping")).content == "echo: ping"
    assert model.complete(request("pong")).content == "echo: pong"


def test_mdl_script_080_usage_is_counted():
    reply = ScriptedModel(["some answer text"]).complete(request("a question"))
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


def test_mdl_script_080_usage_is_estimated_unless_the_reply_states_it():
    messages = [{"role": "system", "content": "s" * 40}, {"role": "user", "content": "q" * 20},
                {"role": "assistant", "content": None}, {"role": "user", "content": ""}]
    asked = ModelRequest(model="scripted", messages=messages, tools=[{}, {}])
    stated = ModelReply(content="x", usage=Usage(7, 3, 0.25))
    model = ScriptedModel([tool_call("add", a=1, b=2), stated, text("")])
    estimated = model.complete(asked).usage  # 60 characters / 4 + 4 a message + 20 a tool; "add" + '{"a": 1, "b": 2}'
    assert estimated == Usage(60 // 4 + 4 * 4 + 20 * 2, (3 + 16) // 4 + 1, 0.0)
    assert model.complete(asked).usage == Usage(7, 3, 0.25)  # the reply's own usage, as scripted
    assert model.complete(request()).usage.completion_tokens == 1  # an empty text still costs a token


def test_mdl_seam_060_usage_is_a_frozen_value():
    usage = Usage(5, 2)
    assert usage == Usage(prompt_tokens=5, completion_tokens=2, cost=None) and hash(usage) == hash(Usage(5, 2))
    assert Usage() == Usage(0, 0, None) and usage.total_tokens == 7
    assert dataclasses.replace(usage, cost=0.5) == Usage(5, 2, 0.5)
    assert usage + Usage(1, 1, 0.5) == Usage(6, 3, 0.5)
    assert pickle.loads(pickle.dumps(usage)) == usage  # durable steps pickle replies with their usage
    with pytest.raises(dataclasses.FrozenInstanceError):
        usage.cost = 1.0  # type: ignore[misc]


def test_mdl_script_090_streams_text_to_a_callback():
    pieces: list[str] = []
    reply = ScriptedModel(["one two three"]).complete(request(), on_token=pieces.append)
    assert "".join(pieces) == reply.content == "one two three"
    assert len(pieces) == 3


def test_mdl_replay_010_a_recorded_trace_replays_offline():
    live = ScriptedModel([tool_call("add", a=1, b=2), text("3")], name="live")
    with capture() as trace:
        call_model(live, request("what is 1+2"))
        call_model(live, request("now answer"))
    assert len(trace.model_replies()) == 2

    replayed = ScriptedModel.replay(Trace.load(trace.to_json()))
    first = replayed.complete(request("what is 1+2"))
    assert first.tool_calls[0].name == "add" and json.loads(first.tool_calls[0].arguments) == {"a": 1, "b": 2}
    assert replayed.complete(request("now answer")).content == "3"
    with pytest.raises(ScriptedModelExhausted):
        replayed.complete(request())


def test_mdl_replay_020_replay_from_a_json_file(tmp_path):
    live = ScriptedModel([text("saved answer")])
    with capture() as trace:
        call_model(live, request())
    path = tmp_path / "run.json"
    trace.to_json(path)
    assert ScriptedModel.replay(path).complete(request()).content == "saved answer"


def test_mdl_replay_030_reply_round_trips_through_dict():
    original = tool_calls(("f", {"x": [1, 2]}))
    restored = ModelReply.from_dict(json.loads(json.dumps(original.to_dict())))
    assert restored.tool_calls == original.tool_calls
