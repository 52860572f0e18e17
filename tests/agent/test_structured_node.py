"""The one structured node (AGT-STRUCT-010): a graph step that drives StructuredBot's exchange (validation,
repair with the errors, StructuredOutputError after max_repairs) the same way in a sync Flow and an AsyncFlow,
and hands the validated object with the reply's text to ``post``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from llamabot.agents import AsyncFlow, Flow, StructuredNode
from llamabot.agents.structured import Parsed
from llamabot.bot.structuredbot import StructuredBot
from llamabot.errors import StructuredOutputError
from llamabot.models.exchange import acarry_out, carry_out, using_steps
from llamabot.models.scripted import ScriptedModel, text


class Point(BaseModel):
    x: int
    y: int


class PointNode(StructuredNode[Point]):
    """Asks for the point named in ``shared["ask"]``; ``post`` keeps what it was handed."""

    def prep(self, shared: dict[str, Any]) -> str:
        return shared["ask"]

    def post(self, shared: dict[str, Any], prep_res: str, parsed: Parsed[Point]) -> str | None:
        shared["parsed"] = parsed
        return None


class KeptFailure(PointNode):
    keep_failures = True


def _run(replies: list[Any], *, use_async: bool, cls: type[PointNode] = PointNode,
         max_repairs: int = 2) -> tuple[dict[str, Any], ScriptedModel]:
    """Run a ``cls`` node on a scripted model with ``replies`` in a one-node flow of the given kind."""
    model = ScriptedModel(replies)
    node = cls(StructuredBot("Answer with JSON.", Point, model=model, max_repairs=max_repairs))
    shared: dict[str, Any] = {"ask": "the point (1, 2)"}
    if use_async:
        asyncio.run(AsyncFlow(start=node).run_async(shared))
    else:
        Flow(start=node).run(shared)
    return shared, model


@pytest.mark.parametrize("use_async", [False, True])
def test_agt_struct_010_valid_json_reaches_post_as_the_validated_object(use_async: bool):
    shared, model = _run([text('{"x": 1, "y": 2}')], use_async=use_async)
    assert shared["parsed"] == Parsed(Point(x=1, y=2), '{"x": 1, "y": 2}')
    request = model.requests[0]
    assert request.response_format["json_schema"]["name"] == "Point"
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.messages[1]["content"] == "the point (1, 2)"


@pytest.mark.parametrize("use_async", [False, True])
def test_agt_struct_010_invalid_json_is_sent_back_with_its_errors_then_repaired(use_async: bool):
    replies = [text("{not json"), text('{"x": 1}'), text('{"x": 1, "y": 2}')]
    shared, model = _run(replies, use_async=use_async)
    assert shared["parsed"] == Parsed(Point(x=1, y=2), '{"x": 1, "y": 2}')
    assert len(model.requests) == 3
    feedback = model.requests[2].messages
    assert feedback[-2] == {"role": "assistant", "content": '{"x": 1}'}
    assert feedback[-1]["content"].startswith("That output is not valid") and "y: Field required" in feedback[-1]["content"]


@pytest.mark.parametrize("use_async", [False, True])
def test_agt_struct_010_structured_output_error_after_max_repairs(use_async: bool):
    with pytest.raises(StructuredOutputError) as caught:
        _run([text("{not json"), text('{"x": "a", "y": 2}'), text("unused")], use_async=use_async, max_repairs=1)
    assert caught.value.attempts == 2 and caught.value.raw_output == '{"x": "a", "y": 2}'
    assert any(e.startswith("x:") for e in caught.value.errors)


@pytest.mark.parametrize("use_async", [False, True])
def test_agt_struct_010_keep_failures_hands_the_error_to_post(use_async: bool):
    shared, model = _run([text("nope")], use_async=use_async, cls=KeptFailure, max_repairs=0)
    parsed = shared["parsed"]
    assert parsed.value is None and parsed.raw == "nope" and isinstance(parsed.error, StructuredOutputError)
    assert len(model.requests) == 1


def test_agt_struct_010_sync_and_async_flows_give_the_same_outcome_and_requests():
    replies = [text('{"x": 1}'), text('{"x": 1, "y": 2}')]
    sync_shared, sync_model = _run(list(replies), use_async=False)
    async_shared, async_model = _run(list(replies), use_async=True)
    assert sync_shared["parsed"] == async_shared["parsed"]
    assert [r.messages for r in sync_model.requests] == [r.messages for r in async_model.requests]


class Recorder:
    """A step runner that records each request it carries out (as a durable run's does)."""

    def __init__(self) -> None:
        self.steps: list[Any] = []

    def step(self, request: Any, model: Any, on_token: Any) -> Any:
        self.steps.append(request)
        return carry_out(request, model, on_token)

    async def astep(self, request: Any, model: Any, on_token: Any) -> Any:
        self.steps.append(request)
        return await acarry_out(request, model, on_token)


@pytest.mark.parametrize("use_async", [False, True])
def test_agt_struct_010_each_model_request_is_a_step_of_a_durable_run(use_async: bool):
    recorder = Recorder()
    with using_steps(recorder):
        shared, model = _run([text("{not json"), text('{"x": 3, "y": 4}')], use_async=use_async)
    assert shared["parsed"].value == Point(x=3, y=4)
    assert recorder.steps == model.requests and len(recorder.steps) == 2
