"""The process-wide switch: ``instrument()`` exports every root run of the process until ``uninstrument()``;
nothing is on, or even imported, until it is called (OBS-OTEL-080, OBS-OTEL-090)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel, tool
from llamabot.models.scripted import tool_call
from llamabot.observe import otel
from llamabot.observe.tracing import process_hooks
from llamabot.toolkits.calculator import add

from .helpers import Exported, parent_of


@pytest.fixture(autouse=True)
def switched_off_after():
    yield
    otel.uninstrument()


def answer_bot(**options) -> AgentBot:
    return AgentBot(
        tools=[add],
        model=ScriptedModel([tool_call("add", a=1, b=2), tool_call("respond_to_user", response="3")]),
        **options,
    )


def test_obs_otel_080_instrument_exports_every_run_without_touching_the_bots():
    exported = Exported()
    hook = otel.instrument(exported.provider)
    assert process_hooks() == (hook,)
    assert answer_bot()("1+2") == "3"
    assert len(exported.spans) == 7 and exported.one("invoke_agent AgentBot").parent is None


def test_obs_otel_080_uninstrument_stops_export_for_new_runs():
    exported = Exported()
    otel.instrument(exported.provider)
    otel.uninstrument()
    assert process_hooks() == ()
    answer_bot()("1+2")
    assert exported.spans == []


def test_obs_otel_080_instrument_again_replaces_the_exporter_and_keeps_other_process_hooks():
    first, second = Exported(), Exported()
    otel.instrument(first.provider)
    otel.instrument(second.provider, capture_content=True)
    assert len(process_hooks()) == 1 and process_hooks()[0].capture_content is True
    answer_bot()("1+2")
    assert first.spans == [] and len(second.spans) == 7


def test_obs_otel_080_a_nested_run_is_exported_once_under_the_tool_that_started_it():
    exported = Exported()
    otel.instrument(exported.provider)
    inner = answer_bot()

    @tool
    def delegate(question: str) -> str:
        """Ask another agent.

        Args:
            question: What to ask.
        """
        return inner(question)

    outer = AgentBot(
        tools=[delegate],
        model=ScriptedModel(
            [tool_call("delegate", question="1+2"), tool_call("respond_to_user", response="3")]
        ),
    )
    assert outer("ask") == "3"
    runs = sorted(exported.named("invoke_agent AgentBot"), key=lambda s: s.start_time)
    assert (
        len(runs) == 2
    )  # not four: the nested run inherits the outer run's hooks instead of adding them again
    assert parent_of(runs[1], exported.spans).name == "execute_tool delegate"
    assert len(exported.spans) == 7 + 7


def test_obs_otel_080_a_root_run_nests_under_the_application_s_active_span():
    exported = Exported()
    otel.instrument(exported.provider)
    with exported.provider.get_tracer("app").start_as_current_span("POST /ask") as request:
        answer_bot()("1+2")
    run = exported.one("invoke_agent AgentBot")
    assert run.parent.span_id == request.get_span_context().span_id
    assert run.context.trace_id == request.get_span_context().trace_id


def test_obs_otel_080_a_per_bot_hook_and_the_process_wide_one_export_side_by_side():
    everywhere, mine = Exported(), Exported()
    otel.instrument(everywhere.provider)
    answer_bot(hooks=[otel.OTelHook(mine.provider)])("1+2")
    for exported in (everywhere, mine):
        assert len(exported.spans) == 7
        assert all(
            parent_of(s, exported.spans) is not None
            for s in exported.spans
            if s.name != "invoke_agent AgentBot"
        )


async def test_obs_otel_080_runs_in_flight_finish_their_export_after_uninstrument():
    exported = Exported()
    otel.instrument(exported.provider)
    model = ScriptedModel([tool_call("respond_to_user", response="ok")], latency_s=0.05)
    running = asyncio.ensure_future(AsyncAgentBot(tools=[add], model=model).arun("q"))
    await asyncio.sleep(0.01)
    otel.uninstrument()
    assert await running == "ok"
    assert sorted(s.name for s in exported.spans) == [
        "chat scripted",
        "decision",
        "execute_tool respond_to_user",
        "invoke_agent AsyncAgentBot",
    ]


def test_obs_otel_080_a_provider_given_to_instrument_is_not_shut_down_by_uninstrument():
    exported = Exported()
    hook = otel.instrument(exported.provider)
    assert hook.owned_provider is None
    otel.uninstrument()
    answer_bot(hooks=[otel.OTelHook(exported.provider)])("1+2")
    assert len(exported.spans) == 7


def test_obs_otel_090_nothing_is_on_or_imported_until_instrument_is_called():
    code = """
        import sys
        import llamabot
        from llamabot import AgentBot
        import llamabot.reasoning.aot, llamabot.reasoning.tot, llamabot.reasoning.anot, llamabot.cli
        from llamabot.observe.tracing import process_hooks
        print(sorted({m.split(".")[0] for m in sys.modules if m.startswith("opentelemetry")}), process_hooks())
        import llamabot.observe.otel
        print(process_hooks())
        """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:2] == ["[] ()", "()"]


def test_obs_otel_080_by_default_spans_go_to_the_global_provider_even_one_set_after_instrument():
    code = """
        import os
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            os.environ.pop(name, None)
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from llamabot import AgentBot, ScriptedModel
        from llamabot.models.scripted import tool_call
        from llamabot.observe import otel

        hook = otel.instrument()  # before the application configured OpenTelemetry
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        AgentBot(model_name=ScriptedModel([tool_call("respond_to_user", response="ok")]))("hi")
        print(hook.owned_provider, sorted(s.name for s in exporter.get_finished_spans()))
        """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == (
        "None ['chat scripted', 'decision', 'execute_tool respond_to_user', 'invoke_agent AgentBot']"
    )


def test_obs_otel_110_without_the_extra_the_import_error_names_it():
    code = """
        import sys
        sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
        try:
            import llamabot.observe.otel
        except ImportError as exc:
            print(exc)
        """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith('OpenTelemetry export needs the otel extra: pip install "llamabot[otel]"')
