"""Agent framework overhead, measured side by side in one run.

- ``step_us``: framework time per decision step (decision + tool, tracing on), scripted model behind the
  project's model seam (no LiteLLM), zero latency, model time excluded. Next to it, plain pocketflow's time
  per node step (``pocketflow_node_us``), and ``step_vs_pocketflow``: what one agent decision step costs in
  plain pocketflow node steps. Measured in pairs (a pocketflow sample, then an agent sample, back to back, gc
  off), the ratio taken per pair and the median over the pairs: this shared machine's speed drifts by 2x
  within seconds, so two medians measured one after the other can be 40% apart for the same code.
- ``concurrent_ratio``: 1,000 concurrent ``arun`` on ONE AsyncAgentBot, 3 decisions each, scripted model with
  50 ms latency; wall time over the ideal 150 ms (median of five bursts; ``concurrent_best_ratio``: the best).
  ``pocketflow_concurrent_ratio``: the same burst of the same agent loop written in plain pocketflow
  (``pocketflow_agent``: no validation, trace, hooks or usage), alternating with ours, and
  ``concurrent_vs_pocketflow``: our wall time over its, burst by burst (median). A ratio over a fixed ideal moves
  with the machine's speed (this machine alternates between phases about 1.5x apart); ``concurrent_node_us`` is
  plain pocketflow's time per node step measured just before each pair of bursts, to say which phase it was.
- ``litellm_ratio``: the same 1,000 runs with the model reached through a LiteLLM custom provider with the same
  latency, over raw ``litellm.acompletion`` making the same calls (1,000 concurrent chains of 3) in this run.
  Also prints the raw LiteLLM cost per call with and without zero-cost model registration.
- ``reuse_ratio``: per-step time of a call after 200 on one reused AgentBot (its conversation kept, the window
  capped by ``history_limit``) over a new bot's first call, side by side (the median of the pairs' ratios; every
  call three decisions).
- ``otel_live_ratio``: the same, exporting the live way only (``OTelHook(direct=False)``: the public tracing API):
  what the direct way saves (see ``observe/otel.py``)
- ``otel_ratio``: CPU time per decision step with every run exported to OpenTelemetry
  (``llamabot.observe.otel.instrument`` with the SDK, a ``SimpleSpanProcessor`` and the in-memory exporter: each
  span converted and exported as it ends, on the run's thread) over the same without export, side by side.
  ``otel_batch_ratio``: the same through a ``BatchSpanProcessor`` (what ``instrument()`` makes from the
  ``OTEL_*`` environment), its flush inside the measured time so the export thread's CPU counts.
  ``otel_noop_ratio``: the same with the OpenTelemetry API's no-op provider (the hook's own mapping cost, no
  SDK); ``otel_sdk_span_us``: one bare SDK span; ``otel_floor_us``: the SDK's own work per span the direct way exports
  (``sdk_export_floor_us``) and ``otel_floor_ratio``: the step with that added per span over the step without
  export, the best ratio any mapping could reach. ``otel_off_ratio``: a process that turned export on, exported
  and turned it off, over one that never turned it on (fresh interpreters, alternating): off costs nothing when
  the two agree within noise. All in CPU time (``process_time``, best of several samples), so the load of other
  processes on a shared machine moves these figures less.

    python benchmarks/agent_overhead.py [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): the same measurements with far fewer repetitions (seconds), for
smoke checks; its figures are noisier. The ``RESULT`` line says which mode made it (``quick=1``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from types import MappingProxyType
from typing import Any

import pocketflow

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel
from llamabot.models.reply import ModelReply, ModelRequest
from llamabot.models.scripted import tool_call
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import set_process_hooks
from llamabot.toolkits.calculator import CALCULATOR_TOOLS
from llamabot.tools.defaults import respond_to_user
from llamabot.tools.tool import as_tool

SCRIPT = [
    tool_call("add", a=2, b=3),
    tool_call("multiply", a=5, b=7),
    tool_call("respond_to_user", response="35"),
]
STEPS_PER_RUN = len(SCRIPT)
#: Spans a run exports per decision step: each step's decision, model call and tool call, plus the run's own.
OTEL_SPANS_PER_STEP = (1 + 3 * STEPS_PER_RUN) / STEPS_PER_RUN


def scripted_reply(request: ModelRequest) -> ModelReply:
    """The decision for this point of the run, read off the conversation length (stateless, so any number of
    concurrent runs can share one model)."""
    decided = (len(request.messages) - 2) // 2  # system + user, then an assistant turn and a tool result per step
    return SCRIPT[min(decided, STEPS_PER_RUN - 1)]


class TimedModel:
    """Wraps a chat model and accumulates the time spent inside it, so it can be excluded."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.spent = 0.0

    def complete(self, request, on_token=None):
        t0 = time.perf_counter()
        reply = self.inner.complete(request, on_token)
        self.spent += time.perf_counter() - t0
        return reply

    async def acomplete(self, request, on_token=None):
        return await self.inner.acomplete(request, on_token)


def pocketflow_loop(steps: int) -> tuple[Any, dict[str, int]]:
    """A plain pocketflow loop of ``steps`` node steps (one node that routes back to itself) and its counter."""

    class Tick(pocketflow.Node):
        def post(self, shared, prep_res, exec_res):
            shared["n"] += 1
            return "again" if shared["n"] < steps else None

    warnings.filterwarnings("ignore", message="Flow ends")  # pocketflow warns when our loop ends
    node = Tick()
    node - "again" >> node
    return pocketflow.Flow(start=node), {"n": 0}


def pocketflow_node_sample(flow: Any, steps: int) -> float:
    """µs per node step of one walk of the plain pocketflow loop (gc off)."""
    shared = {"n": 0}
    gc.disable()
    t0 = time.perf_counter()
    flow.run(shared)
    elapsed = time.perf_counter() - t0
    gc.enable()
    assert shared["n"] == steps
    return elapsed / steps * 1e6


def timed_runs(bot: Any, runs: int, clock: Any = time.perf_counter) -> float:
    """Seconds (by ``clock``) that ``runs`` fresh agent runs on ``bot`` take, gc off."""
    gc.disable()
    t0 = clock()
    for _ in range(runs):
        bot.reset()
        bot("What is (2 + 3) * 7?")
    elapsed = clock() - t0
    gc.enable()
    return elapsed


def step_sample(bot: Any, model: TimedModel, runs: int) -> tuple[float, float]:
    """(framework µs per step, model µs per step) of ``runs`` fresh runs on ``bot`` (gc off)."""
    model.spent = 0.0
    total = timed_runs(bot, runs)
    steps = runs * STEPS_PER_RUN
    return (total - model.spent) / steps * 1e6, model.spent / steps * 1e6


def bench_step_vs_pocketflow(rounds: int, node_steps: int, runs: int) -> tuple[float, float, float, float]:
    """The agent's step next to plain pocketflow's, sample by sample: each round measures a walk of
    ``node_steps`` pocketflow node steps and then ``runs`` agent runs, back to back, so both see the same state of
    a shared machine (whose speed here drifts by 2x within seconds), and divides the two. Returns the medians
    over the rounds of (framework µs per step, pocketflow µs per node step, their per-round ratio, model µs
    per step)."""
    flow, _ = pocketflow_loop(node_steps)
    model = TimedModel(ScriptedModel(responder=scripted_reply, record=False, strict=False))
    bot = AgentBot(tools=CALCULATOR_TOOLS, model=model)
    pocketflow_node_sample(flow, node_steps)  # warm-up, both sides
    step_sample(bot, model, max(runs // 10, 1))
    steps, nodes, ratios, model_us = [], [], [], []
    for _ in range(rounds):
        node = pocketflow_node_sample(flow, node_steps)
        step, spent = step_sample(bot, model, runs)
        steps.append(step)
        nodes.append(node)
        ratios.append(step / node)
        model_us.append(spent)
    med = statistics.median
    return med(steps), med(nodes), med(ratios), med(model_us)


async def bench_concurrent(n: int, latency: float) -> float:
    model = ScriptedModel(responder=scripted_reply, latency_s=latency, record=False, strict=False)
    bot = AsyncAgentBot(tools=CALCULATOR_TOOLS, model=model)
    t0 = time.perf_counter()
    results = await asyncio.gather(*(bot.arun(f"question {i}") for i in range(n)))
    wall = time.perf_counter() - t0
    assert all(r == "35" for r in results)
    return wall


def pocketflow_agent(latency: float) -> Any:
    """The agent loop of ``bench_concurrent`` written in plain pocketflow, with nothing of llamabot but the tools'
    functions: a decision node that waits ``latency`` (as the scripted model does) and answers from ``SCRIPT``,
    appends the assistant message and routes to the tool named; a tool node per tool that parses the arguments
    (``json.loads``), calls the function, appends the result and loops back. No argument validation, trace,
    hooks, usage or error handling: the floor of this benchmark for an agent on the graph engine."""
    functions = {t.name: t.func for t in map(as_tool, [*CALCULATOR_TOOLS, respond_to_user])}

    class Decide(pocketflow.AsyncNode):
        async def prep_async(self, shared):
            return shared["messages"]

        async def exec_async(self, messages):
            await asyncio.sleep(latency)
            return SCRIPT[min((len(messages) - 2) // 2, STEPS_PER_RUN - 1)]

        async def post_async(self, shared, messages, reply):
            call = reply.tool_calls[0]
            messages.append({"role": "assistant", "content": reply.content, "tool_calls": [call.to_message()]})
            shared["call"] = call
            return call.name

    class Call(pocketflow.AsyncNode):
        async def prep_async(self, shared):
            return shared["call"]

        async def exec_async(self, call):
            return functions[call.name](**json.loads(call.arguments))

        async def post_async(self, shared, call, result):
            shared["messages"].append({"role": "tool", "tool_call_id": call.id, "content": str(result)})
            if call.name != "respond_to_user":
                return "decide"
            shared["result"] = result
            return None

    warnings.filterwarnings("ignore", message="Flow ends")
    decide = Decide()
    for name in functions:
        node = Call()
        decide - name >> node
        node - "decide" >> decide
    return pocketflow.AsyncFlow(start=decide)


async def bench_pocketflow_concurrent(n: int, latency: float) -> float:
    """Wall time of ``n`` concurrent runs of :func:`pocketflow_agent` (one flow, a state dict per run)."""
    flow = pocketflow_agent(latency)
    states = [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": f"question {i}"}]}
              for i in range(n)]
    t0 = time.perf_counter()
    await asyncio.gather(*(flow.run_async(state) for state in states))
    wall = time.perf_counter() - t0
    assert all(state["result"] == "35" for state in states)
    return wall


def register_litellm_scripted(latency: float, zero_cost: bool) -> tuple[str, Any]:
    """The same scripted model (``scripted_reply`` after ``latency`` seconds) as a LiteLLM custom provider."""
    from llamabot.models.litellm_model import ensure_litellm
    from llamabot.models.scripted_provider import register_scripted_provider

    model = ScriptedModel(responder=scripted_reply, latency_s=latency, record=False, strict=False, name=f"lat{latency}")
    prefix = "benchzero" if zero_cost else "benchplain"
    return register_scripted_provider(model, prefix=prefix, zero_cost=zero_cost), ensure_litellm()


async def bench_litellm(n: int, latency: float, zero_cost: bool) -> tuple[float, float]:
    """(agent wall, raw litellm wall) for n concurrent 3-call chains."""
    name, litellm = register_litellm_scripted(latency, zero_cost)
    bot = AsyncAgentBot(tools=CALCULATOR_TOOLS, model=name)
    tools = [t.json_schema for t in bot.tools.values()]
    await bot.arun("warm-up")

    async def raw_chain(i: int) -> None:
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": f"question {i}"}]
        for _ in range(STEPS_PER_RUN):
            response = await litellm.acompletion(model=name, messages=messages, tools=tools, tool_choice="required")
            call = response.choices[0].message.tool_calls[0]
            messages = [*messages, {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
                        {"role": "tool", "tool_call_id": call.id, "content": "1"}]

    t0 = time.perf_counter()
    await asyncio.gather(*(raw_chain(i) for i in range(n)))
    raw = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = await asyncio.gather(*(bot.arun(f"question {i}") for i in range(n)))
    agent = time.perf_counter() - t0
    assert all(r == "35" for r in results)
    return agent, raw


def litellm_cpu_per_call_ms(zero_cost: bool, calls: int = 300) -> float:
    name, litellm = register_litellm_scripted(0.0, zero_cost)

    async def go():
        messages = [{"role": "user", "content": "hi"}]
        await litellm.acompletion(model=name, messages=messages)
        t0 = time.process_time()
        for _ in range(calls):
            await litellm.acompletion(model=name, messages=messages)
        return (time.process_time() - t0) / calls * 1000

    return asyncio.run(go())


def run_reply(request: ModelRequest) -> ModelReply:
    """:func:`scripted_reply` for a bot that keeps its conversation between calls: the decision for this point of
    the current run, read off the assistant turns since the last user message (so every call takes the script's
    three decisions, however long the history before it)."""
    decided = 0
    for message in reversed(request.messages):
        role = message["role"]
        if role == "user":
            break
        decided += role == "assistant"
    return SCRIPT[min(decided, STEPS_PER_RUN - 1)]


def bench_reuse(calls: int, window: int = 21) -> float:
    """Per-step time of a call on one bot reused for ``calls`` calls (its conversation kept, the window capped by
    ``history_limit``) over a new bot's first call, measured side by side: ``window`` pairs (a new bot's first
    call and the reused bot's next, in alternating order), the median of the pairs' ratios. Paired, so a phase of
    the machine moves both calls of a pair alike; every call takes the script's three decisions (:func:`run_reply`)."""
    model = TimedModel(ScriptedModel(responder=run_reply, record=False, strict=False))

    def one_call(bot: Any) -> float:
        spent = model.spent
        t0 = time.perf_counter()
        assert bot("What is (2 + 3) * 7?") == "35"
        return (time.perf_counter() - t0 - (model.spent - spent)) / STEPS_PER_RUN

    reused = AgentBot(tools=CALCULATOR_TOOLS, model=model)
    for _ in range(calls):
        one_call(reused)
    ratios = []
    for index in range(window):
        fresh = AgentBot(tools=CALCULATOR_TOOLS, model=model)
        if index % 2 == 0:
            first = one_call(fresh)
            late = one_call(reused)
        else:
            late = one_call(reused)
            first = one_call(fresh)
        ratios.append(late / first)
    return statistics.median(ratios)


def otel_step_us(runs: int, flush: Any = None) -> float:
    """CPU µs per decision step of ``runs`` agent runs on one bot (scripted model, gc off). CPU time of this
    process (``time.process_time``, every thread), so the load of other processes on a shared machine does not
    count. ``flush``: called after the runs, inside the measured time (a batch processor's export)."""
    bot = AgentBot(tools=CALCULATOR_TOOLS, model=ScriptedModel(responder=scripted_reply, record=False, strict=False))
    elapsed = timed_runs(bot, runs, time.process_time)
    if flush is not None:
        t0 = time.process_time()
        flush()
        elapsed += time.process_time() - t0
    return elapsed / (runs * STEPS_PER_RUN) * 1e6


def sdk_span_us(provider: Any, spans: int) -> float:
    """CPU µs of one bare OpenTelemetry SDK span (start and end, no attributes) on ``provider``: the floor an
    exported span costs whatever maps it."""
    tracer = provider.get_tracer("bench")
    gc.disable()
    t0 = time.process_time()
    for _ in range(spans):
        tracer.start_span("span").end()
    elapsed = time.process_time() - t0
    gc.enable()
    return elapsed / spans * 1e6


class SDKExport:
    """What llamabot's direct way (see ``llamabot.observe.otel.OTelHook``) hands the SDK for each span, and nothing
    of the mapping: a ``SpanContext`` (a new span id), the finished ``ReadableSpan`` (three constant attributes) and
    a ``SimpleSpanProcessor``'s ``on_end`` (context attach and detach, the in-memory export). The SDK's own work per
    exported span, whoever maps it."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        self.exporter = InMemorySpanExporter()
        processor = SimpleSpanProcessor(self.exporter)
        provider = TracerProvider()
        ids, scope, resource = provider.id_generator, InstrumentationScope("bench"), provider.resource
        trace_id, flags, unset = ids.generate_trace_id(), TraceFlags(TraceFlags.SAMPLED), Status(StatusCode.UNSET)
        parent = SpanContext(trace_id, ids.generate_span_id(), False, flags, None)
        attributes = MappingProxyType(
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.call.id": "call_1"})
        new_id, internal = ids.generate_span_id, SpanKind.INTERNAL

        def export_one(name: str) -> None:
            context = SpanContext(trace_id, new_id(), False, flags, None)
            processor.on_end(ReadableSpan(name, context, parent, resource, attributes, (), (), internal, None, unset,
                                          1, 2, scope))

        self.export_one = export_one

    def exported(self) -> int:
        """How many spans were exported since the last call (and forget them)."""
        count = len(self.exporter.get_finished_spans())
        self.exporter.clear()
        return count


def sdk_exports() -> Any:
    """A function ``export(n)`` that exports ``n`` spans as :class:`SDKExport` does."""
    sdk = SDKExport()

    def export(spans: int) -> None:
        export_one = sdk.export_one
        for _ in range(spans):
            export_one("execute_tool add")
        assert sdk.exported() == spans

    return export


class SDKFloorHook(RunHooks):
    """A hook that exports each span of a run as it ends with only the SDK's part (:class:`SDKExport`): what any
    OpenTelemetry export through llamabot's hooks costs in a run, before any mapping of names and attributes."""

    def __init__(self) -> None:
        self.sdk = SDKExport()

    def on_start(self, span: Any, state: Any) -> None:
        pass

    def on_end(self, span: Any, state: Any) -> None:
        self.sdk.export_one(span.name)


def sdk_export_floor_us(spans: int) -> float:
    """CPU µs per span of :func:`sdk_exports` (gc off). ``otel_floor_ratio`` — the step with this added for each
    of its spans, over the step without export — is the best ratio any mapping could reach."""
    export = sdk_exports()
    export(10)  # warm-up
    gc.disable()
    t0 = time.process_time()
    export(spans)
    elapsed = time.process_time() - t0
    gc.enable()
    return elapsed / spans * 1e6


def bench_otel(runs: int, rounds: int) -> tuple[float, float, float, float, float, float, float, float]:
    """``otel_step_us`` side by side, the least disturbed (smallest) of ``rounds`` samples each, alternating
    within each round: (export off, exporting with the SDK to memory, exporting to the API's no-op provider,
    one bare SDK span, exporting to memory through a ``BatchSpanProcessor`` — the processor
    ``instrument()`` makes from the environment — flushed inside the measured time so its thread's export
    counts, the SDK's own floor per exported span: ``sdk_export_floor_us``, the step exporting through
    :class:`SDKFloorHook`: the SDK's part of each span in a run, with no mapping, and the step exporting the live
    way only: ``OTelHook(direct=False)``, the public tracing API)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import NoOpTracerProvider

    from llamabot.observe import otel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    batch_exporter = InMemorySpanExporter()
    batch_provider = TracerProvider()
    batch_provider.add_span_processor(BatchSpanProcessor(batch_exporter, max_queue_size=1 << 16))
    floor_hook = SDKFloorHook()
    live_hook = otel.OTelHook(provider, direct=False)
    otel_step_us(max(runs // 5, 5))  # warm-up
    off, exporting, noop, batched, floor_run, live = [], [], [], [], [], []
    for _ in range(rounds):
        set_process_hooks((live_hook,))
        live.append(otel_step_us(runs))
        exporter.clear()
        set_process_hooks((floor_hook,))
        floor_run.append(otel_step_us(runs))
        set_process_hooks(())
        assert floor_hook.sdk.exported() == round(runs * STEPS_PER_RUN * OTEL_SPANS_PER_STEP), "spans lost"
        off.append(otel_step_us(runs))
        otel.instrument(provider)
        exporting.append(otel_step_us(runs))
        assert len(exporter.get_finished_spans()) == round(runs * STEPS_PER_RUN * OTEL_SPANS_PER_STEP), "spans lost"
        exporter.clear()
        otel.instrument(NoOpTracerProvider())
        noop.append(otel_step_us(runs))
        otel.instrument(batch_provider)
        batched.append(otel_step_us(runs, batch_provider.force_flush))
        assert len(batch_exporter.get_finished_spans()) == round(runs * STEPS_PER_RUN * OTEL_SPANS_PER_STEP), "lost"
        batch_exporter.clear()
        otel.uninstrument()
    batch_provider.shutdown()
    bare, floor = [], []
    for _ in range(rounds):
        bare.append(sdk_span_us(provider, runs * 10))
        exporter.clear()
        floor.append(sdk_export_floor_us(runs * 10))
    return min(off), min(exporting), min(noop), min(bare), min(batched), min(floor), min(floor_run), min(live)


#: One sample of ``bench_otel_off`` in a fresh interpreter: the best ``otel_step_us`` of a process where export
#: was never turned on, or was turned on, exported runs, and was turned off again.
OFF_PROBE = """
import sys
sys.path.insert(0, {here!r})
from agent_overhead import otel_step_us
from llamabot.observe import otel
if {switched}:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    otel.instrument(provider)
    otel_step_us({warm})
    otel.uninstrument()
otel_step_us({warm})
print(min(otel_step_us({runs}) for _ in range({samples})))
"""


def bench_otel_off(runs: int, pairs: int, samples: int) -> tuple[float, float]:
    """(never instrumented, instrumented then uninstrumented): the best ``otel_step_us`` of ``pairs`` fresh
    interpreters each, started alternately, so that neither side runs first or last."""
    here = os.path.dirname(os.path.abspath(__file__))
    results: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(pairs):
        for switched in (False, True):
            code = OFF_PROBE.format(here=here, switched=switched, warm=max(runs // 5, 5), runs=runs, samples=samples)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            results[switched].append(float(out.stdout.strip().splitlines()[-1]))
    return min(results[False]), min(results[True])


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="far fewer repetitions (smoke checks); also LLAMABOT_BENCH_QUICK=1")
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    # full mode: the figures recorded in the docs; quick mode: the same measurements, seconds instead of minutes
    n = 100 if quick else 1000
    latency = 0.05
    pair_rounds, node_steps, step_runs = (5, 2000, 50) if quick else (41, 6000, 200)
    concurrent_repeats = 1 if quick else 5  # the median of five bursts: this machine's speed drifts within seconds
    litellm_calls = 30 if quick else 300
    reuse_calls, reuse_window = (40, 5) if quick else (200, 21)
    otel_runs, otel_rounds = (50, 3) if quick else (300, 7)
    otel_off_pairs = (2, 3) if quick else (5, 5)  # (interpreter pairs, samples in each)
    if quick:
        print("quick mode: far fewer repetitions, noisier figures")

    step_us, node_us, step_vs_pocketflow, model_us = bench_step_vs_pocketflow(pair_rounds, node_steps, step_runs)
    print(f"framework per decision step (decision + tool, tracing on): {step_us:7.1f} µs  (model excluded: {model_us:.1f} µs)")
    print(f"plain pocketflow per node step:                            {node_us:7.1f} µs")
    print(f"one agent decision step = {step_vs_pocketflow:.1f} plain pocketflow node steps "
          f"(median of {pair_rounds} back-to-back pairs)")

    asyncio.run(bench_concurrent(min(n, 100), 0.0))  # warm-up (first-call imports, schema caches)
    asyncio.run(bench_pocketflow_concurrent(min(n, 100), 0.0))
    walls, plain_walls, speeds = [], [], []
    probe, _ = pocketflow_loop(node_steps)
    for _ in range(concurrent_repeats):  # ours and plain pocketflow's, alternating
        speeds.append(pocketflow_node_sample(probe, node_steps))  # the machine's speed just before the bursts
        gc.collect()
        walls.append(asyncio.run(bench_concurrent(n, latency)))
        gc.collect()
        plain_walls.append(asyncio.run(bench_pocketflow_concurrent(n, latency)))
    ideal = STEPS_PER_RUN * latency
    wall = statistics.median(walls)
    concurrent_ratio = wall / ideal
    concurrent_best_ratio = min(walls) / ideal
    pocketflow_concurrent_ratio = statistics.median(plain_walls) / ideal
    concurrent_vs_pocketflow = statistics.median(a / b for a, b in zip(walls, plain_walls, strict=True))
    concurrent_node_us = statistics.median(speeds)
    print(f"{n} concurrent arun x {STEPS_PER_RUN} decisions @ {latency * 1000:.0f} ms: {wall * 1000:.0f} ms "
          f"(ideal {ideal * 1000:.0f} ms) -> ratio {concurrent_ratio:.2f} (best of {concurrent_repeats}: "
          f"{concurrent_best_ratio:.2f})")
    print(f"the same loop in plain pocketflow (no validation, trace, hooks or usage): ratio "
          f"{pocketflow_concurrent_ratio:.2f}; ours over it, burst by burst: {concurrent_vs_pocketflow:.2f}; plain "
          f"pocketflow node step just before each pair: {concurrent_node_us:.2f} µs (the machine's speed then: the "
          f"ratios are wall time over a fixed ideal, so they rise in a slow phase of the machine)")

    plain_ms = litellm_cpu_per_call_ms(zero_cost=False, calls=litellm_calls)
    zero_ms = litellm_cpu_per_call_ms(zero_cost=True, calls=litellm_calls)
    print(f"LiteLLM CPU per call: {plain_ms:.2f} ms unknown model, {zero_ms:.2f} ms registered zero-cost "
          f"({(1 - zero_ms / plain_ms) * 100:.0f}% less)")

    agent_wall, raw_wall = asyncio.run(bench_litellm(n, latency, zero_cost=True))
    litellm_ratio = agent_wall / raw_wall
    print(f"through LiteLLM: agent {agent_wall * 1000:.0f} ms vs raw litellm.acompletion {raw_wall * 1000:.0f} ms "
          f"-> ratio {litellm_ratio:.2f}")

    reuse_ratio = bench_reuse(reuse_calls, reuse_window)
    print(f"reused bot: per-step time at call {reuse_calls} / first calls -> ratio {reuse_ratio:.2f}")

    (otel_base_us, otel_on_us, otel_noop_us, otel_sdk_span_us, otel_batch_us, otel_floor_us, otel_floor_run_us,
     otel_live_us) = bench_otel(otel_runs, otel_rounds)
    otel_floor_run_ratio = otel_floor_run_us / otel_base_us
    otel_live_ratio = otel_live_us / otel_base_us
    otel_ratio = otel_on_us / otel_base_us
    otel_floor_ratio = (otel_base_us + OTEL_SPANS_PER_STEP * otel_floor_us) / otel_base_us
    otel_batch_ratio = otel_batch_us / otel_base_us
    otel_noop_ratio = otel_noop_us / otel_base_us
    print(f"OpenTelemetry, CPU per step: {otel_base_us:.1f} µs off, {otel_on_us:.1f} µs exporting (SDK, in-memory) "
          f"-> ratio {otel_ratio:.2f}; {otel_noop_us:.1f} µs to the no-op provider -> ratio {otel_noop_ratio:.2f}; "
          f"a bare SDK span costs {otel_sdk_span_us:.1f} µs ({OTEL_SPANS_PER_STEP:.2f} spans per step); "
          f"{otel_batch_us:.1f} µs exporting through a BatchSpanProcessor (flush counted) -> ratio {otel_batch_ratio:.2f}")
    print(f"OpenTelemetry SDK floor: {otel_floor_us:.1f} µs of the SDK's own work per exported span (span context, "
          f"ReadableSpan, SimpleSpanProcessor.on_end, in-memory export) x {OTEL_SPANS_PER_STEP:.2f} spans per step "
          f"-> the best ratio any mapping could reach: {otel_floor_ratio:.2f}; llamabot's mapping adds "
          f"{otel_on_us - otel_base_us - OTEL_SPANS_PER_STEP * otel_floor_us:.1f} µs per step")
    print(f"OpenTelemetry SDK floor in a run: {otel_floor_run_us:.1f} µs per step exporting each span through a hook "
          f"that does only the SDK's part (no mapping) -> ratio {otel_floor_run_ratio:.2f}")
    print(f"OpenTelemetry the live way only (OTelHook(direct=False), the public tracing API): {otel_live_us:.1f} µs "
          f"per step -> ratio {otel_live_ratio:.2f}; the direct way saves "
          f"{1 - (otel_on_us - otel_base_us) / max(otel_live_us - otel_base_us, 1e-9):.0%} of the export's cost")
    otel_never_us, otel_off_us = bench_otel_off(otel_runs, *otel_off_pairs)
    otel_off_ratio = otel_off_us / otel_never_us
    print(f"OpenTelemetry off, CPU per step (fresh interpreters, alternating): {otel_never_us:.1f} µs never "
          f"instrumented, {otel_off_us:.1f} µs after instrument + export + uninstrument -> ratio {otel_off_ratio:.3f}")

    print(
        f"RESULT step_us={step_us:.1f} pocketflow_node_us={node_us:.2f} step_vs_pocketflow={step_vs_pocketflow:.1f} "
        f"concurrent_ratio={concurrent_ratio:.3f} concurrent_best_ratio={concurrent_best_ratio:.3f} "
        f"concurrent_node_us={concurrent_node_us:.2f} pocketflow_concurrent_ratio={pocketflow_concurrent_ratio:.3f} "
        f"concurrent_vs_pocketflow={concurrent_vs_pocketflow:.3f} litellm_ratio={litellm_ratio:.3f} reuse_ratio={reuse_ratio:.3f} "
        f"litellm_call_ms={plain_ms:.2f} litellm_zero_cost_call_ms={zero_ms:.2f} otel_ratio={otel_ratio:.3f} otel_batch_ratio={otel_batch_ratio:.3f} "
        f"otel_noop_ratio={otel_noop_ratio:.3f} otel_off_ratio={otel_off_ratio:.3f} "
        f"otel_sdk_span_us={otel_sdk_span_us:.1f} otel_floor_us={otel_floor_us:.2f} otel_floor_ratio={otel_floor_ratio:.3f} "
        f"otel_floor_run_ratio={otel_floor_run_ratio:.3f} otel_live_ratio={otel_live_ratio:.3f} "
        f"quick={int(quick)}"
    )


if __name__ == "__main__":
    main()
