"""OpenTelemetry export of the reasoning patterns on the scripted model: AoT atoms are tool executions under
their layer, ANoT phases and ToT steps are spans with their model calls inside (OBS-OTEL-010, OBS-OTEL-020)."""

from __future__ import annotations

import asyncio

from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.observe.otel import OTelHook
from llamabot.reasoning.anot import ANoTBot
from llamabot.reasoning.aot import AoTBot, AsyncAoTBot
from llamabot.reasoning.tot.graph import ToTBot
from tests.reasoning.anot.helpers import ITEMS, three_phase_responder
from tests.reasoning.tot.helpers import requested_count, requested_ids, schema_name

from .helpers import Exported, parent_of

#: Two layers of two atoms, then the final: (1, 2) -> (3, 4) -> 5.
WIDE = {
    "atoms": [
        {"id": 1, "kind": "tool", "name": "add", "input": {"a": 1, "b": 2}, "dependsOn": []},
        {"id": 2, "kind": "tool", "name": "add", "input": {"a": 3, "b": 4}, "dependsOn": []},
        {
            "id": 3,
            "kind": "tool",
            "name": "multiply",
            "input": {"a": "<result_of_1>", "b": 2},
            "dependsOn": [1],
        },
        {
            "id": 4,
            "kind": "tool",
            "name": "multiply",
            "input": {"a": "<result_of_2>", "b": 2},
            "dependsOn": [2],
        },
        {"id": 5, "kind": "final", "name": "report", "dependsOn": [3, 4]},
    ]
}


def generic(request):
    """ToT: three thoughts per expansion, every one scored 0.6 except the second (0.9)."""
    if schema_name(request) == "tot_thoughts":
        return json_reply({"thoughts": [f"step{letter}" for letter in "ABC"[: requested_count(request)]]})
    return json_reply({"scores": {i: 0.9 if i == "t2" else 0.6 for i in requested_ids(request)}})


def test_obs_otel_010_aot_atoms_are_tool_executions_under_their_layer():
    exported = Exported()
    bot = AsyncAoTBot(expressions=False, model=ScriptedModel([json_reply(WIDE)]), hooks=[OTelHook(exported.provider)])
    assert asyncio.run(bot.arun("q")).answer == {3: 6.0, 4: 14.0}
    spans = exported.spans
    atoms = sorted(
        (s for s in spans if s.attributes.get("llamabot.span.kind") == "atom"), key=lambda s: s.name
    )
    assert [(a.attributes["gen_ai.tool.name"], a.attributes["gen_ai.tool.call.id"]) for a in atoms] == [
        ("add", "1"),
        ("add", "2"),
        ("multiply", "3"),
        ("multiply", "4"),
    ]
    assert all(a.attributes["gen_ai.operation.name"] == "execute_tool" for a in atoms)
    layers = {parent_of(a, spans).attributes["llamabot.layer"]: parent_of(a, spans) for a in atoms}
    assert sorted(layers) == [0, 1] and all(layer.name == "execute" for layer in layers.values())
    plan = exported.one("plan")
    assert parent_of(exported.one("chat scripted"), spans) is plan
    root = parent_of(plan, spans)
    assert root.parent is None and root.attributes["gen_ai.operation.name"] == "invoke_agent"


def test_obs_otel_010_anot_phases_are_spans_holding_their_model_calls():
    exported = Exported()
    bot = ANoTBot(
        model=ScriptedModel(responder=three_phase_responder()), debug=0, hooks=[OTelHook(exported.provider)]
    )
    bot("kids and cozy", ITEMS)
    spans = exported.spans
    phases = [s for s in spans if s.attributes.get("llamabot.span.kind") == "phase"]
    assert sorted({p.name for p in phases}) == ["P1", "P2", "P3"]
    chats = [s for s in spans if s.name == "chat scripted"]
    assert chats
    for chat in chats:  # every model call belongs to a phase (through a decision or an LWT step)
        ancestor = parent_of(chat, spans)
        while ancestor is not None and ancestor.attributes.get("llamabot.span.kind") != "phase":
            ancestor = parent_of(ancestor, spans)
        assert ancestor is not None, f"a model call outside every phase: {parent_of(chat, spans).name}"
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools) == len(bot.last_trace.of_kind("tool_call"))  # phase 2's tool calls, whichever ran
    assert all(t.attributes["gen_ai.tool.call.id"] for t in tools)
    assert len({s.context.trace_id for s in spans}) == 1


def test_obs_otel_010_tot_expansions_are_generate_and_evaluate_steps_with_a_chat_each():
    exported = Exported()
    bot = ToTBot(
        model=ScriptedModel(responder=generic), branching_factor=2, max_depth=2, hooks=[OTelHook(exported.provider)]
    )
    bot("x")
    spans = exported.spans
    steps = [s for s in spans if s.attributes.get("llamabot.span.kind") == "tot_step"]
    assert {s.name for s in steps} == {"generate", "evaluate"}
    assert len(steps) == len(bot.last_trace.of_kind("tot_step"))
    for step in steps:
        assert parent_of(step, spans).name == "invoke_agent ToTBot"
        children = [s for s in spans if s.parent is not None and s.parent.span_id == step.context.span_id]
        assert [c.name for c in children] == ["chat scripted"]
        assert children[0].attributes["gen_ai.output.type"] == "json"


def test_obs_otel_020_aot_atoms_record_arguments_and_results_only_when_opted_in():
    quiet, verbose = Exported(), Exported()
    AoTBot(expressions=False, model=ScriptedModel([json_reply(WIDE)]), hooks=[OTelHook(quiet.provider)])("q")
    AoTBot(
        expressions=False,
        model=ScriptedModel([json_reply(WIDE)]), hooks=[OTelHook(verbose.provider, capture_content=True)]
    )("q")
    first = next(s for s in quiet.spans if s.attributes.get("gen_ai.tool.call.id") == "1")
    assert (
        "gen_ai.tool.call.arguments" not in first.attributes
        and "gen_ai.tool.call.result" not in first.attributes
    )
    first = next(s for s in verbose.spans if s.attributes.get("gen_ai.tool.call.id") == "1")
    assert first.attributes["gen_ai.tool.call.arguments"] == '{"a": 1, "b": 2}'
    assert first.attributes["gen_ai.tool.call.result"] in ("3", "3.0")
