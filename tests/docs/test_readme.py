"""Every code block of README.md runs, on the scripted tour model, so the README cannot drift from the code.

**Python blocks** run in order in one namespace and one event loop, as a notebook runs its cells (top-level
``await`` allowed): one test per block, named after its line (``README.md:34``). A new block is picked up by
itself. A block that fails names its line and the failing line; the blocks after it then fail with "not run:
README.md:N failed first". The default model of the tour is a scripted model (``tests/docs/tour_model.py``),
reached through the public mechanism a user has: ``register_scripted_provider`` and ``$LLAMABOT_MODEL``. It
answers from the shape of each request (tools, response format) and the question, never from the README's
text; the embedded model is never loaded. To make a new section's bot answer, extend the tour model (its
docstring says how): an ``INTENTS`` entry for a new tool, or a branch of ``respond`` for a new request shape.

:data:`CHECKS` adds assertions on what some blocks computed (the agent's answer, that the approval block paused
before ``pay`` ran...), each found by a piece of its block's code: a check whose code is no longer in the
README fails, so none stops applying unnoticed.

What the blocks need from outside is in ``tests/fixtures/readme/``: ``myapp/bots.py`` (the factory the durable
block names; it runs on real DBOS with a SQLite file in a temporary directory, ``$LLAMABOT_DB``),
``server.py`` (the MCP server ``mcp_tools("python server.py")`` starts), ``mypkg/tools.py`` (``--tool
mypkg.tools:search``), ``data.json`` and ``game24.csv`` (the evaluation commands' datasets). The blocks run in
a temporary working directory holding copies of them.

**Bash blocks**: every ``llamabot`` command line is run through the CLI (typer's ``CliRunner``, in this process,
so it reaches the same scripted model and the same database), after the Python blocks; :data:`COMMANDS` says how
each is run, or why it is not. Not run: the two install commands (they build llama.cpp and download the 1.6 GB
model; the second one also runs the whole suite), ``llamabot chat --model local/...`` (it loads the embedded
model; ``tests/models/test_local_cli.py`` drives it under ``-m local_model``), ``llamabot models`` and ``llamabot
models pull`` (they read, hash or assemble the embedded model files). A command line not in :data:`COMMANDS`
fails its test until it is classified there, and an entry whose command left the README fails too.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from llamabot.models.reply import ModelRequest
from tests.docs.notebook import Block, Notebook, blocks_of

ROOT = Path(__file__).resolve().parents[2]

README = ROOT / "README.md"
ANOT_DATA = ROOT / "tests" / "fixtures" / "anot" / "philly_cafes_mini"
PYTHON_BLOCKS = blocks_of(README, "python")


@dataclass
class BlockRun:
    """What one block did: the model requests it made and what it printed."""

    requests: list[ModelRequest]
    output: str


@dataclass
class Tour:
    """The README run as a notebook: blocks run once, in order, on first need."""

    notebook: Notebook
    model: Any
    workdir: Path
    runs: dict[int, BlockRun] = field(default_factory=dict)
    failed: Block | None = None

    def run_through(self, index: int) -> BlockRun:
        """Run the Python blocks up to ``index`` (those not run yet) and return what block ``index`` did."""
        for position in range(index + 1):
            if position in self.runs:
                continue
            if self.failed is not None:
                raise AssertionError(f"not run: {self.failed.where} failed first")
            block, start, out = PYTHON_BLOCKS[position], len(self.model.requests), _Tee(sys.stdout)
            try:
                with contextlib.redirect_stdout(out):
                    self.notebook.run(block)
            except BaseException:
                self.failed = block
                raise
            self.runs[position] = BlockRun(self.model.requests[start:], out.getvalue())
        return self.runs[index]


class _Tee(io.StringIO):
    """Keeps what a block prints and still passes it on (pytest shows it with a failure)."""

    def __init__(self, stream: Any):
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(text)
        return super().write(text)


@pytest.fixture(scope="module")
def tour(tour_world):
    """The README's blocks, run once in order in one notebook on the tour world (``conftest.py``)."""
    notebook = Notebook()
    try:
        yield Tour(notebook, tour_world.model, tour_world.workdir)
    finally:
        notebook.close()


# -- what some blocks computed ------------------------------------------------------------------------------

def _tool_results(request: ModelRequest) -> list[str]:
    return [str(m.get("content")) for m in request.messages if m.get("role") == "tool"]


def _check_tour(ns: dict[str, Any], run: BlockRun) -> None:
    assert ns["answer"] == "1024"                      # power(2, 10) ran and its result came back
    assert "final_answer {'result': '42'" in run.output  # astream ended with multiply(7, 6)


def _check_usage(ns: dict[str, Any], run: BlockRun) -> None:
    assert ns["answer"] == "1024"
    assert ns["trace"].usage.requests == 2             # power, then respond_to_user


def _check_approval(ns: dict[str, Any], run: BlockRun) -> None:
    assert "call" in ns, "bot('Pay alice 5 euros') did not raise ApprovalRequired"
    assert "[('pay', {'amount': 5.0, 'to': 'alice'})]" in run.output
    paused, resumed = run.requests                     # one request before the pause, one after the approval
    assert not _tool_results(paused)
    assert [r for r in _tool_results(resumed) if r.startswith("sent")] == ["sent 5.0 to alice"]
    paid = [s.attributes.get("result") for s in ns["bot"].last_trace.spans if s.name == "pay"]
    assert paid == ["sent 5.0 to alice"]               # the resumed run ran pay once


def _check_checkpoints(ns: dict[str, Any], run: BlockRun) -> None:
    assert len(ns["saved"]) >= 2
    seen = [_tool_results(r) for r in run.requests]
    assert seen[:3] == [[], ["5"], ["5", "35"]]        # add(2, 3), multiply(5, 7), respond_to_user
    assert [] not in seen[3:] and seen[-1] == ["5", "35"]  # resumed mid-run: add and multiply not run again


def _check_durable(ns: dict[str, Any], run: BlockRun) -> None:
    agent = ns["agent"]
    assert agent.result("q-1") == "437"
    assert agent.result(ns["run_id"]) == agent.show(ns["run_id"]).result
    assert agent.show("q-1").status == "SUCCESS"


def _check_mcp(ns: dict[str, Any], run: BlockRun) -> None:
    offered = {t["function"]["name"] for t in run.requests[0].tools}
    assert "echo" in offered and "multiply" in offered  # the server's tool beside the calculator's


def _check_aot(ns: dict[str, Any], run: BlockRun) -> None:
    assert ns["result"].answer == 17


def _check_tot(ns: dict[str, Any], run: BlockRun) -> None:
    result = ns["result"]
    assert result.solved and result.best.content.endswith("= 24")  # the oracle's steps reach 24
    assert result.solution_path[-1] == result.best.node_id and result.termination.status == "completed"
    assert ns["check_game24"]("4 9 10 13", "(10 - 4) * (13 - 9)") is True


def _check_anot(ns: dict[str, Any], run: BlockRun) -> None:
    assert ns["result"].ranking.top(5)[0] == 1         # the quiet cafe with free WiFi, good for kids


def _check_building_blocks(ns: dict[str, Any], run: BlockRun) -> None:
    assert (ns["city"].name, ns["city"].country) == ("Lyon", "France")
    assert ns["call"].name == "multiply" and ns["call"].arguments == {"a": 23, "b": 19}
    assert "437" in run.output


def _check_scripted(ns: dict[str, Any], run: BlockRun) -> None:
    assert ns["reply"].first.name == "multiply"
    assert ns["replayed"].remaining >= 1


def _check_typed(ns: dict[str, Any], run: BlockRun) -> None:
    product = ns["product"]
    assert type(product).__name__ == "Product"          # validated; the tour model fills it from the run's numbers
    assert {product.a, product.b, product.product} == {23.0, 19.0, 437.0}
    shown = [r for request in run.requests for r in _tool_results(request)]
    assert "tea: 3.5 USD" in " ".join(shown) or any("tea: 3.5" in r for r in shown)   # price_list read its deps
    inner = [s for s in ns["manager"].last_trace.spans if s.kind == "run" and s.parent_id is not None]
    assert len(inner) == 1                              # the calculator agent ran as a child run
    assert type(ns["fallback_bot"].model).__name__ == "FallbackModel"


def _check_custom(ns: dict[str, Any], run: BlockRun) -> None:
    assert ns["custom"].last_trace.spans[0].attributes["result"] == "437"


#: Assertions on what a block computed: a piece of the block's code -> the check.
CHECKS: dict[str, Callable[[dict[str, Any], BlockRun], None]] = {
    'service_bot.astream("What is 7 * 6?")': _check_tour,
    "UsageLimits(max_requests=6": _check_usage,
    "except ApprovalRequired as paused": _check_approval,
    "bot.checkpoints(saved.append)": _check_checkpoints,
    'Durable("myapp.bots:make_agent")': _check_durable,
    'mcp_tools("python server.py")': _check_mcp,
    "result = AoTBot()(": _check_aot,
    "ToTBot(prompts=Game24Prompts()": _check_tot,
    "result = ANoTBot()(": _check_anot,
    'StructuredBot("Extract the city.", City)': _check_building_blocks,
    "ScriptedModel.replay(bot.last_trace)": _check_scripted,
    "output_type=Product": _check_typed,
    "from_flow(decide)": _check_custom,
}


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)), ids=[b.where for b in PYTHON_BLOCKS])
def test_readme_python_block_runs(tour, index):
    block = PYTHON_BLOCKS[index]
    run = tour.run_through(index)
    for piece, check in CHECKS.items():
        if piece in block.code:
            check(tour.notebook.namespace, run)


@pytest.mark.parametrize("piece", list(CHECKS))
def test_readme_check_applies_to_exactly_one_block(piece):
    holding = [b.where for b in PYTHON_BLOCKS if piece in b.code]
    assert len(holding) == 1, f"CHECKS[{piece!r}] applies to {holding or 'no block'}: update CHECKS"


# -- the command lines ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NotRun:
    """A command line the test does not run, and why."""

    reason: str


def cli(*expected: str, before: Callable[[Tour], dict[str, str]] | None = None,
        after: Callable[[Tour, dict[str, str]], None] | None = None) -> Callable[[Tour, list[str]], None]:
    """Run the command line through the ``llamabot`` app: exit status 0 and each ``expected`` text in its output.
    ``before`` prepares what the line names (returns placeholder -> value); ``after`` checks the effect."""

    def run(tour: Tour, argv: list[str]) -> None:
        from typer.testing import CliRunner

        from llamabot.cli import app

        values = before(tour) if before else {}
        argv = [values.get(arg, arg) for arg in argv]
        result = CliRunner().invoke(app, argv[1:])
        assert result.exit_code == 0, f"{shlex.join(argv)} exited {result.exit_code}:\n{result.output}{result.exception!r}"
        for text in expected:
            assert text in result.output, f"{shlex.join(argv)}: {text!r} not in:\n{result.output}"
        if after:
            after(tour, values)

    return run


def _waiting_payment(tour: Tour) -> dict[str, str]:
    """A durable run of ``myapp.bots:make_payer`` that waits for the approval of ``pay``: its id is RUN_ID."""
    from llamabot.durable import Durable

    payer = Durable("myapp.bots:make_payer")
    run_id = payer.start("Pay alice 7 euros")
    deadline = time.monotonic() + 20
    while payer.show(run_id).waiting is None:
        assert time.monotonic() < deadline, f"the run {run_id} never waited for its approval"
        time.sleep(0.05)
    return {"RUN_ID": run_id}


def _paid_as_edited(tour: Tour, values: dict[str, str]) -> None:
    from llamabot.durable import Durable

    assert Durable("myapp.bots:make_payer").result(values["RUN_ID"]) == "sent 5.0 to alice"  # the edited amount


def _saved_plan(tour: Tour, values: dict[str, str]) -> None:
    assert (tour.workdir / "plan.json").is_file()


INSTALL = NotRun("installs llama.cpp and the 1.6 GB embedded model")
EMBEDDED = NotRun("reads, hashes or assembles the embedded model files; tests/models cover them under -m local_model")

#: Each command line of the README's bash blocks (as written, without its comment) -> how it is run, or why not.
COMMANDS: dict[str, Callable[[Tour, list[str]], None] | NotRun] = {
    'python3 -m venv .venv && . .venv/bin/activate && CMAKE_ARGS="$(sh scripts/llama-cmake-args)" pip install '
    '-e ".[local]" && llamabot agent "What is 23 times 19?" --trace': INSTALL,
    'python3 -m venv .venv && . .venv/bin/activate && CMAKE_ARGS="$(sh scripts/llama-cmake-args)" pip install '
    '-e ".[local,dev,durable,otel]" && ruff check . && pytest': NotRun("installs everything, then runs the whole suite"),
    "llamabot runs list": cli("q-1", "SUCCESS"),
    """llamabot runs approve RUN_ID --arguments '{"amount": 5, "to": "alice"}'""":
        cli(before=_waiting_payment, after=_paid_as_edited),
    'llamabot aot "What is (15 + 7) * 3 - 10?" --save plan.json': cli("56", after=_saved_plan),
    "llamabot aot --replay plan.json": cli("56"),
    "llamabot eval aot --dataset multiarith data.json --limit 30": cli(),
    "llamabot eval aot --dataset multiarith data.json --out r.json --resume": cli(),
    'llamabot tot "4 9 10 13"': cli(),
    "llamabot eval tot --dataset game24 game24.csv --limit 30 --out r.json": cli(),
    "llamabot eval tot --dataset game24 game24.csv --limit 30 --out r.json --resume": cli(),
    "llamabot anot --data DIR --limit 5 --candidates 10 --method both --out report.json":
        cli(before=lambda tour: {"DIR": str(ANOT_DATA)}),
    'llamabot agent "What is 2 ** 10 - 24?" --trace': cli("1000"),
    'llamabot agent "..." --tool mypkg.tools:search': cli(),
    'llamabot agent "..." --mcp "python server.py"': cli(),
    'llamabot chat "Why is the sky blue?"': cli("Why is the sky blue?"),
    'llamabot chat --model local/qwen2.5-coder-0.5b "Hi"': NotRun("loads the embedded 0.5B model"),
    "llamabot console": NotRun("serves until stopped; tests/console drive it in a browser with a worker"),
    "llamabot models": EMBEDDED,
    "llamabot models pull qwen2.5-coder-0.5b": EMBEDDED,
}


def command_lines() -> list[tuple[str, int]]:
    """Each command line of the README's bash blocks, without its trailing ``  # comment``, with its line."""
    lines = []
    for block in blocks_of(README, "bash"):
        for offset, line in enumerate(block.code.splitlines()):
            command = re.split(r"\s{2,}#", line)[0].strip()
            if command and not command.startswith("#"):
                lines.append((command, block.line + offset))
    return lines


COMMAND_LINES = command_lines()


RUN_LINES = [(c, n) for c, n in COMMAND_LINES if not isinstance(COMMANDS.get(c), NotRun)]


@pytest.mark.parametrize("command", [c for c, _ in RUN_LINES], ids=[f"README.md:{n}" for _, n in RUN_LINES])
def test_readme_command_line_runs(tour, command):
    how = COMMANDS.get(command)
    assert how is not None, f"README command line not classified: add {command!r} to COMMANDS (run it, or say why not)"
    tour.run_through(len(PYTHON_BLOCKS) - 1)  # the commands act on what the blocks made (the durable runs)
    how(tour, shlex.split(command))


def test_readme_commands_not_run_are_listed_with_a_reason():
    """The lines the test does not run (see the module docstring) are named, each with its reason."""
    not_run = {c: how.reason for c, how in COMMANDS.items() if isinstance(how, NotRun)}
    assert all(not_run.values())
    assert set(not_run) == {c for c, _ in COMMAND_LINES} - {c for c, _ in RUN_LINES}


def test_readme_commands_table_lists_only_readme_lines():
    stale = sorted(set(COMMANDS) - {c for c, _ in COMMAND_LINES})
    assert not stale, f"COMMANDS lists lines the README no longer has: {stale}"
