"""Typed output (API-OUT-*): ``AgentBot(tools, output_type=T)`` returns a validated ``T``.

``respond_to_user``'s ``response`` is typed (its schema is ``T``'s); an invalid answer is shown to the model as the
call's error and it tries again, at most ``max_errors`` times in a row, then ``StructuredOutputError``. ``astream``
yields the answer as it is written (``partial_output``) and the validated object in ``final_answer``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel, tool
from llamabot.agents import from_flow
from llamabot.errors import StructuredOutputError
from llamabot.models.scripted import tool_call
from tests.agent.helpers import tool_messages


class City(BaseModel):
    name: str
    population: int


class Answer(BaseModel):
    cities: list[City]
    verdict: Literal["big", "small"]


@dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    left: str
    right: str


@tool
def population(city: str) -> int:
    """The population of a city.

    Args:
        city: The city.
    """
    return {"Paris": 2_100_000, "Lyon": 520_000}[city]


ANSWER = {"cities": [{"name": "Paris", "population": 2100000}, {"name": "Lyon", "population": 520000}],
          "verdict": "big"}


def test_api_out_010_the_answer_schema_is_the_output_types():
    bot = AgentBot(tools=[population], model=ScriptedModel(), output_type=Answer)
    schema = bot.tools["respond_to_user"].parameters["properties"]["response"]
    assert schema["properties"]["verdict"]["enum"] == ["big", "small"]
    assert schema["properties"]["cities"]["items"]["required"] == ["name", "population"]
    assert "return_object_to_user" not in bot.tools  # it could return anything


def test_api_out_020_a_run_returns_a_validated_instance():
    model = ScriptedModel([tool_call("population", city="Paris"), tool_call("population", city="Lyon"),
                           tool_call("respond_to_user", response=ANSWER)])
    answer, trace = AgentBot(tools=[population], model=model, output_type=Answer).run_sync("Paris and Lyon?")
    assert isinstance(answer, Answer) and answer.cities[1] == City(name="Lyon", population=520000)
    assert trace.spans[0].attributes["result"] is answer
    json.loads(trace.to_json())  # the trace still exports


@pytest.mark.parametrize(("output_type", "response", "expected"), [
    (int, 437, 437),
    (list[str], ["a", "b"], ["a", "b"]),
    (Point, {"x": 1, "y": 2}, Point(1, 2)),
    (Pair, {"left": "l", "right": "r"}, {"left": "l", "right": "r"}),
    (Literal["yes", "no"], "no", "no"),
])
def test_api_out_030_scalars_dataclasses_typeddicts_and_literals(output_type, response, expected):
    model = ScriptedModel([tool_call("respond_to_user", response=response)])
    assert AgentBot(model=model, output_type=output_type)("q") == expected


def test_api_out_040_an_invalid_answer_is_shown_to_the_model_which_tries_again():
    def responder(request):
        shown = [m["content"] for m in tool_messages(request)]
        if not shown:
            return tool_call("respond_to_user", response={"cities": [], "verdict": "huge"})
        assert "verdict" in shown[-1]  # the model is told what was wrong
        return tool_call("respond_to_user", response={"cities": [], "verdict": "small"})

    model = ScriptedModel(responder=responder)
    answer = AgentBot(model=model, output_type=Answer)("q")
    assert answer == Answer(cities=[], verdict="small") and len(model.requests) == 2


def test_api_out_050_an_answer_that_never_validates_is_a_structured_output_error():
    model = ScriptedModel([tool_call("respond_to_user", response={"verdict": "huge"})] * 3)
    with pytest.raises(StructuredOutputError, match="verdict"):
        AgentBot(model=model, output_type=Answer, max_errors=2)("q")
    assert len(model.requests) == 3


def test_api_out_060_a_text_reply_is_validated_as_the_answer():
    model = ScriptedModel(["not a number", "42"])
    assert AgentBot(model=model, output_type=int)("q") == 42
    assert "valid integer" in model.requests[1].messages[-1]["content"]


def test_api_out_070_another_terminal_tool_cannot_bypass_the_type():
    @tool(loopback_name=None)
    def finish() -> str:
        """Finish."""
        return "not an Answer"

    model = ScriptedModel([tool_call("finish")])
    with pytest.raises(StructuredOutputError):
        AgentBot(tools=[finish], model=model, output_type=Answer)("q")


def test_api_out_080_bad_output_types_and_clashes_are_refused():
    with pytest.raises(TypeError, match="output_type must be a type"):
        AgentBot(model=ScriptedModel(), output_type="Answer")

    @tool(loopback_name=None)
    def respond_to_user(response: str) -> str:
        """Mine.

        Args:
            response: The answer.
        """
        return response

    with pytest.raises(TypeError, match="not both"):
        AgentBot(tools=[respond_to_user], model=ScriptedModel(), output_type=int)


async def test_api_out_090_astream_yields_the_partial_object_then_the_validated_one():
    model = ScriptedModel([tool_call("respond_to_user", response=ANSWER)])  # streamed a few characters at a time
    bot = AsyncAgentBot(model=model, output_type=Answer)
    events = [event async for event in bot.astream("q")]
    partial = [e.data["output"] for e in events if e.kind == "partial_output"]
    assert len(partial) >= 3 and partial[-1] == ANSWER
    assert any(p.get("cities") and len(p["cities"]) == 1 for p in partial)  # seen while still being written
    assert isinstance(events[-1].data["result"], Answer)


def test_api_out_100_checkpoints_and_resume_keep_the_typed_answer():
    model = ScriptedModel([tool_call("population", city="Paris"), tool_call("respond_to_user", response=ANSWER)])
    bot = AgentBot(tools=[population], model=model, output_type=Answer)
    saved = []
    bot.run_sync("q", hooks=[bot.checkpoints(saved.append)])
    again = AgentBot(tools=[population], model=ScriptedModel([tool_call("respond_to_user", response=ANSWER)]),
                     output_type=Answer)
    assert again.resume(saved[1].to_json()) == Answer.model_validate(ANSWER)


def test_api_out_110_a_hand_made_graph_with_a_typed_answer_is_typed_too():
    from llamabot import ToolBot
    from llamabot.agents import DecideNode, FuncNode
    from llamabot.tools.output import output_tool

    respond = output_tool(Point)
    decide = DecideNode(ToolBot("p", model=ScriptedModel([tool_call("respond_to_user", response={"x": 1, "y": 2})]),
                                tools=[respond]))
    node = FuncNode(respond)
    decide - node.name >> node
    node - "decide" >> decide
    decide - "decide" >> decide
    assert from_flow(decide)("q") == Point(1, 2)


class Capital(BaseModel):
    country: str
    capital: str


@pytest.mark.local_model
async def test_api_out_120_the_embedded_model_is_constrained_to_the_output_type(local_model_name):
    """The grammar makes the embedded model's answer a Capital by construction; it streams as it is written."""
    bot = AsyncAgentBot(model=local_model_name, max_iterations=2, output_type=Capital)
    events = [event async for event in bot.astream("What is the capital of France? Answer with the structure.")]
    answer = events[-1].data["result"]
    assert isinstance(answer, Capital) and "paris" in answer.capital.lower()
    assert any(e.kind == "partial_output" for e in events)
