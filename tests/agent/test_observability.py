"""Traces, run events, replay of agent runs, and the agent CLI."""

from __future__ import annotations

import contextvars
import json
import os
import sys
import threading

import pytest
from typer.testing import CliRunner

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel
from llamabot.cli import app
from llamabot.models.scripted import tool_call
from llamabot.models.scripted_provider import register_scripted_provider
from llamabot.observe.tracing import Trace, _index_of, capture, close_span, new_trace_id, open_span, under
from llamabot.toolkits.calculator import add, divide, multiply


def run_calculation(model=None):
    model = model or ScriptedModel([
        tool_call("multiply", a=6, b=7), tool_call("divide", a=1, b=0), tool_call("respond_to_user", response="42"),
    ])
    bot = AgentBot(tools=[multiply, divide], model=model)
    return bot, bot("6*7 then 1/0")


def test_agt_obs_010_a_run_has_a_trace_of_decisions_model_calls_and_tool_calls():
    bot, answer = run_calculation()
    trace = bot.last_trace
    assert answer == "42" and len(trace.trace_id) == 32
    kinds = [(s.kind, s.name) for s in trace.spans]
    assert kinds == [
        ("run", "AgentBot"),
        ("decision", "decision"), ("model_call", "model_call"), ("tool_call", "multiply"),
        ("decision", "decision"), ("model_call", "model_call"), ("tool_call", "divide"),
        ("decision", "decision"), ("model_call", "model_call"), ("tool_call", "respond_to_user"),
    ]
    by_id = {s.span_id: s for s in trace.spans}
    for s in trace.spans[1:]:
        parent = by_id[s.parent_id]
        # each graph node step (a decision, a tool call) is a child of the run; model calls nest in their decision
        assert parent.kind == {"decision": "run", "model_call": "decision", "tool_call": "run"}[s.kind]
    multiply_span, divide_span = trace.spans[3], trace.spans[6]
    assert multiply_span.attributes["arguments"] == {"a": 6.0, "b": 7.0} and multiply_span.attributes["result"] == 42.0
    assert divide_span.error == "ZeroDivisionError: cannot divide by zero"
    assert all(s.end is not None and s.end >= s.start for s in trace.spans)


def test_agt_obs_012_span_ids_are_their_places_in_the_trace_when_threads_open_spans_at_once():
    """Spans are appended without a lock: each takes its index after its own append, also when other threads
    append in between."""
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: appends interleave
    with capture() as trace:
        root = open_span("root", "node")
        start = threading.Barrier(8)

        def open_many() -> None:
            with under(root[0]):
                start.wait()
                for _ in range(2000):
                    close_span(open_span("step", "node"))

        # each thread in a copy of this context (the run's), as a run's worker threads are
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(open_many,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        finally:
            sys.setswitchinterval(switching)
        close_span(root)
    assert len(trace.spans) == 1 + 8 * 2000
    assert [s.span_id for s in trace.spans] == list(range(len(trace.spans)))
    assert all(s.parent_id == 0 for s in trace.spans[1:])
    # the path taken when another thread appended right after: found by identity, not equality
    first, twin = trace.spans[1], trace.spans[2]
    assert _index_of([first, twin, trace.spans[3]], twin) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only; the re-seeding it tests is too")
def test_agt_obs_012_trace_ids_are_random_and_a_forked_child_never_repeats_its_parents():
    ids = {new_trace_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the id it draws next
        os.write(write, new_trace_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.waitpid(pid, 0)
    assert len(child) == 32 and child != new_trace_id()  # without the re-seed both would draw the same next id


def test_agt_obs_010_traces_export_to_json_and_load_back():
    bot, _ = run_calculation()
    exported = json.loads(bot.last_trace.to_json())
    model_call = next(s for s in exported["spans"] if s["kind"] == "model_call")
    assert model_call["attributes"]["prompt_tokens"] > 0
    assert model_call["attributes"]["reply"]["tool_calls"][0]["name"] == "multiply"
    assert model_call["attributes"]["request"]["tools"][:1] == ["respond_to_user"]
    loaded = Trace.load(json.dumps(exported))
    assert loaded.trace_id == bot.last_trace.trace_id and len(loaded.spans) == len(bot.last_trace.spans)


def test_agt_obs_015_a_recorded_agent_run_replays_offline_to_the_same_answer():
    bot, answer = run_calculation()
    replay_model = ScriptedModel.replay(Trace.load(bot.last_trace.to_json()))
    replayed_bot, replayed = run_calculation(replay_model)
    assert replayed == answer
    assert [s.name for s in replayed_bot.last_trace.of_kind("tool_call")] == ["multiply", "divide", "respond_to_user"]
    assert replay_model.remaining == 0


async def test_agt_obs_020_astream_yields_run_events_in_order():
    model = ScriptedModel([tool_call("add", a=1, b=2), tool_call("respond_to_user", response="3")])
    bot = AsyncAgentBot(tools=[add], model=model)
    events = [e async for e in bot.astream("1+2")]
    assert "".join(e.data["delta"] for e in events if e.kind == "token") == "3"  # the answer as it was written
    events = [e for e in events if e.kind != "token"]
    assert [e.kind for e in events] == [
        "decision", "tool_started", "tool_finished", "decision", "tool_started", "tool_finished", "final_answer",
    ]
    assert events[0].data["calls"] == ["add"]
    assert events[2].data["result"] == 3.0
    assert events[-1].data["result"] == "3"
    assert len({e.trace_id for e in events}) == 1


async def test_agt_obs_020_astream_reports_a_failed_run_then_raises():
    model = ScriptedModel([ConnectionError("provider down")])
    bot = AsyncAgentBot(tools=[add], model=model)
    seen = []
    with pytest.raises(ConnectionError):
        async for event in bot.astream("1+2"):
            seen.append(event)
    assert seen[-1].kind == "error" and "provider down" in seen[-1].data["error"]


def test_agt_cli_010_agent_command_answers_through_any_litellm_model_string_and_shows_the_trace():
    model = ScriptedModel([tool_call("multiply", a=23, b=19), tool_call("respond_to_user", response="437")], name="cli")
    name = register_scripted_provider(model, prefix="scripted-cli")
    result = CliRunner().invoke(
        app, ["agent", "What is 23 * 19?", "--model", name, "--tool", "llamabot.toolkits.calculator:multiply", "--trace"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("437")
    assert "tool_call multiply" in result.output and "= 437" in result.output
    assert [t["function"]["name"] for t in model.requests[0].tools] == [
        "respond_to_user", "return_object_to_user", "today_date", "inspect_globals", "multiply",
    ]


def test_agt_cli_020_agent_command_rejects_a_tool_that_cannot_be_loaded():
    result = CliRunner().invoke(app, ["agent", "q", "--tool", "llamabot.toolkits.calculator:nope"])
    assert result.exit_code != 0 and "cannot load" in result.output


@pytest.mark.local_model
def test_agt_cli_030_agent_answers_with_a_tool_on_the_embedded_model(local_model_name):
    result = CliRunner().invoke(app, ["agent", "What is 23 times 19?", "--model", local_model_name])
    assert result.exit_code == 0, result.output
    assert "437" in result.output


async def test_agt_obs_025_a_failed_stream_reports_its_own_trace_id_and_closing_early_cancels_the_run():
    import asyncio

    failing = ScriptedModel([ConnectionError("down")])
    slow = ScriptedModel(responder=lambda r: tool_call("add", a=1, b=1), latency_s=0.05)
    bot_a = AsyncAgentBot(tools=[add], model=failing)
    events = []
    with pytest.raises(ConnectionError):
        async for event in bot_a.astream("fails"):
            events.append(event)
    assert events[-1].kind == "error"
    assert events[-1].trace_id == bot_a.last_trace.trace_id

    bot_b = AsyncAgentBot(tools=[add], model=slow)
    stream = bot_b.astream("runs forever")
    first = await stream.__anext__()
    assert first.kind == "decision"
    await stream.aclose()
    calls = len(slow.requests)
    await asyncio.sleep(0.2)
    assert len(slow.requests) == calls  # the run stopped with the stream


def test_agt_obs_040_the_scripted_provider_never_replaces_someone_elses_provider():
    import litellm

    from llamabot.models.litellm_model import ensure_litellm

    ensure_litellm()
    litellm.custom_provider_map = [*litellm.custom_provider_map, {"provider": "theirs", "custom_handler": object()}]
    with pytest.raises(ValueError, match="already registered by someone else"):
        register_scripted_provider(ScriptedModel(), prefix="theirs")
    litellm.custom_provider_map = [e for e in litellm.custom_provider_map if e["provider"] != "theirs"]


def test_agt_cli_040_agent_command_shows_each_tool_call_as_it_happens_unless_quiet():
    def script():
        return ScriptedModel([tool_call("multiply", a=23, b=19), tool_call("respond_to_user", response="437")])

    name = register_scripted_provider(script(), prefix="scripted-cli-steps")
    result = CliRunner().invoke(app, ["agent", "q", "--model", name, "--tool", "llamabot.toolkits.calculator:multiply"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "multiply(a=23, b=19) -> 437" in result.output and "thinking..." in result.output
    quiet_name = register_scripted_provider(script(), prefix="scripted-cli-quiet")
    quiet = CliRunner().invoke(app, ["agent", "q", "--quiet", "--model", quiet_name, "--tool",
                                     "llamabot.toolkits.calculator:multiply"])
    assert quiet.exit_code == 0 and "multiply(" not in quiet.output and quiet.output.strip() == "437"


def test_agt_stream_100_agent_command_prints_the_answer_as_it_is_written():
    answer = "The product of 23 and 19 is 437, as multiply said."
    model = ScriptedModel([tool_call("multiply", a=23, b=19), tool_call("respond_to_user", response=answer)])
    name = register_scripted_provider(model, prefix="scripted-cli-stream")
    result = CliRunner().invoke(app, ["agent", "q", "--model", name, "--tool", "llamabot.toolkits.calculator:multiply"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    # the answer reached stdout while the model wrote it: before the respond_to_user step line (printed on stderr
    # when that tool has run), and stdout holds it once
    assert result.stdout.strip() == answer
    assert result.output.index(answer) < result.output.index("respond_to_user(")
