"""Parser scaling: every parser of model output timed on its worst inputs at n and 2n characters.

Each parser of model output (tool-call text, tool arguments, structured output, ToT thoughts and scores,
Game-of-24 steps, answers and checker, LWT scripts and layers, ANoT rankings, paths and LOGIC, AoT plans,
references and evaluated answers) gets the inputs that made it hang or crash before issue #13 (unclosed
fences of blanks or newlines, long digit runs, thousands of nested brackets, blank lines inside a prompt,
two-node dependency cycles...). Each is timed at n and at 2n characters (best of several repeats, each a loop
long enough to time); a linear parser doubles its time (ratio about 2), a quadratic one quadruples it. One
line per input, then ``RESULT worst_doubling_ratio=... worst_case=<index> worst_ms_per_kb=... n=... quick=0``
(target: ``worst_doubling_ratio`` at most 2.5).

    python benchmarks/parser_scaling.py [--n 8000] [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): n = 5,000 and fewer repeats, for smoke checks (``quick=1``). n stays
above Python's 4,300-digit integer limit, below which converting digits is quadratic by design (bounded by it).

``WORST_INPUTS`` is also what ``tests/hardening`` times at 20,000 characters.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from llamabot.bot.structuredbot import parse_structured
from llamabot.evals.game24.check import check_game24
from llamabot.evals.game24.steps import extract_answer, parse_step
from llamabot.evals.scorers import parse_number
from llamabot.models.tool_call_text import extract_tool_calls
from llamabot.reasoning.anot.logic import parse_logic
from llamabot.reasoning.anot.lwt import execution_layers, parse_lwt
from llamabot.reasoning.anot.lwt import parse_step as parse_lwt_step
from llamabot.reasoning.anot.paths import parse_path
from llamabot.reasoning.anot.ranking import parse_ranking
from llamabot.reasoning.aot.plan import Plan, references
from llamabot.reasoning.aot.validate import validate_plan
from llamabot.reasoning.tot.parsing import parse_scores, parse_thoughts
from llamabot.toolkits.calculator import CALCULATOR_TOOLS
from llamabot.tools.tool import as_tool

ADD = as_tool(CALCULATOR_TOOLS[0])
TOOLS = {t.name: t for t in map(as_tool, CALCULATOR_TOOLS)}


class Answer(BaseModel):
    """A small structured-output model."""

    answer: str


def _fill(pattern: str, n: int, head: str = "", tail: str = "") -> str:
    """``head`` + ``pattern`` repeated to ``n`` characters in all + ``tail``."""
    body = max(0, n - len(head) - len(tail))
    return head + (pattern * (body // len(pattern) + 1))[:body] + tail


def _quiet(call: Callable[[str], Any]) -> Callable[[str], Any]:
    """``call``, with the project's documented errors for bad input counted as an answer (they are one)."""

    def run(text: str) -> Any:
        try:
            return call(text)
        except ValueError as exc:  # every documented parse error here is a ValueError (typed subclasses)
            return exc

    return run


def _plan_text(text: str) -> Any:
    try:
        plan = Plan.model_validate_json(text)
    except ValueError as exc:
        return exc
    return _quiet(lambda _: validate_plan(plan, TOOLS))(text)


def _script(n: int, line: str) -> str:
    """Lines ``line.format(i=..., j=...)`` (``j``: the line before) to about ``n`` characters."""
    out, size = [], 0
    while size < n:
        out.append(line.format(i=len(out), j=max(0, len(out) - 1)))
        size += len(out[-1])
    return "".join(out)


@dataclass(frozen=True, slots=True)
class WorstInput:
    """One parser on one kind of worst input: ``make(n)`` builds the input of about ``n`` characters."""

    parser: str
    kind: str
    call: Callable[[str], Any]
    make: Callable[[int], str]


WORST_INPUTS: tuple[WorstInput, ...] = (
    WorstInput("extract_tool_calls", "unclosed fence of blanks", lambda t: extract_tool_calls(t, {"add"}),
               lambda n: _fill(" ", n, "```json ")),
    WorstInput("extract_tool_calls", "unclosed fence of newlines", lambda t: extract_tool_calls(t, {"add"}),
               lambda n: _fill("\n", n, "```json")),
    WorstInput("extract_tool_calls", "unclosed tag of blanks", lambda t: extract_tool_calls(t, {"add"}),
               lambda n: _fill(" ", n, "<tool_call>")),
    WorstInput("extract_tool_calls", "nested brackets", lambda t: extract_tool_calls(t, {"add"}),
               lambda n: _fill("[", n, '{"name": "add", "arguments": ')),
    WorstInput("Tool.validate", "nested brackets", _quiet(ADD.validate), lambda n: _fill("[", n, '{"a": ')),
    WorstInput("Tool.validate", "digits", _quiet(ADD.validate), lambda n: _fill("1", n, '{"a": ', ', "b": 1}')),
    WorstInput("parse_structured", "unclosed fence of blanks", _quiet(lambda t: parse_structured(Answer, t)),
               lambda n: _fill(" ", n, "```json ")),
    WorstInput("parse_structured", "fences", _quiet(lambda t: parse_structured(Answer, t)),
               lambda n: _fill("```", n)),
    WorstInput("parse_thoughts", "unclosed fence of blanks", parse_thoughts, lambda n: _fill(" ", n, "```json ")),
    WorstInput("parse_thoughts", "nested brackets", parse_thoughts, lambda n: _fill("[", n)),
    WorstInput("parse_thoughts", "continuation lines", parse_thoughts, lambda n: _fill("more words\n", n, "1. a\n")),
    WorstInput("parse_scores", "digits", lambda t: parse_scores(t, ["a", "b", "c"]), lambda n: _fill("1", n, "", "x")),
    WorstInput("parse_scores", "id then blanks", lambda t: parse_scores(t, ["a", "b", "c"]),
               lambda n: _fill(" ", n, "1", "x")),
    WorstInput("parse_scores", "score label then blanks", lambda t: parse_scores(t, ["a", "b", "c"]),
               lambda n: _fill(" ", n, "1 score", "x")),
    WorstInput("parse_scores", "huge score", lambda t: parse_scores(t, ["a"]),
               lambda n: _fill("9", n, '{"t1": ', "}")),
    WorstInput("game24.parse_step", "digits", _quiet(parse_step), lambda n: _fill("1", n, "", "x")),
    WorstInput("game24.parse_step", "operand then blanks", _quiet(parse_step), lambda n: _fill(" ", n, "1 + ", "x")),
    WorstInput("game24.extract_answer", "step lines", lambda t: extract_answer(t, "1 1 1 1"),
               lambda n: _fill("1 + 1 = 2\n", n)),
    WorstInput("check_game24", "nested parentheses", lambda t: check_game24("4 9 10 13", t), lambda n: _fill("(", n)),
    WorstInput("parse_lwt", "prompt of blank lines", _quiet(parse_lwt), lambda n: _fill("\n", n, "(a)=LLM('", "')")),
    WorstInput("parse_lwt", "head of blanks", _quiet(parse_lwt), lambda n: _fill(" ", n, "(", "x")),
    WorstInput("parse_lwt", "many steps", _quiet(parse_lwt), lambda n: _script(n, "(s{i})=LLM('x {{(s{j})}}')\n")),
    WorstInput("lwt.parse_step", "backslashes and quotes", _quiet(parse_lwt_step),
               lambda n: _fill("\\'", n, "(a)=LLM('", "')")),
    WorstInput("lwt.execution_layers", "two-step cycles", _quiet(lambda t: execution_layers(parse_lwt(t))),
               lambda n: _script(n, "(a{i})=LLM('{{(b{i})}}')\n(b{i})=LLM('{{(a{i})}}')\n")),
    WorstInput("parse_ranking", "unclosed list of blanks", lambda t: parse_ranking(t, 10),
               lambda n: _fill(" ", n, "[", "x")),
    WorstInput("parse_ranking", "long list", lambda t: parse_ranking(t, 10), lambda n: _fill("1, ", n, "[", "]")),
    WorstInput("parse_ranking", "digits", lambda t: parse_ranking(t, 10), lambda n: _fill("7", n, "[", "]")),
    WorstInput("anot.parse_path", "segments", _quiet(parse_path), lambda n: _fill("[a]", n, "[1]")),
    WorstInput("parse_logic", "long AND", _quiet(parse_logic), lambda n: _fill("1, ", n, "AND(", ")")),
    WorstInput("parse_logic", "nesting", _quiet(parse_logic), lambda n: _fill("AND(", n)),
    WorstInput("aot plan", "nested input", _plan_text,
               lambda n: _fill("[", n, '{"atoms": [{"id": 1, "kind": "tool", "name": "add", "input": {"a": ')),
    WorstInput("aot.references", "reference digits", lambda t: references({"a": t}),
               lambda n: _fill("1", n, "<result_of_", ">")),
    WorstInput("aot plan", "reference digits", _plan_text,
               lambda n: _fill("1", n, '{"atoms": [{"id": 1, "kind": "tool", "name": "add", "input": {"a": '
                                       '"<result_of_', '>", "b": 1}}, {"id": 2, "kind": "final", "name": "report", '
                                       '"dependsOn": [1]}]}')),
    WorstInput("aot.parse_number", "answer then blanks", parse_number, lambda n: _fill(" ", n, "answer", "x")),
    WorstInput("aot.parse_number", "digits and commas", parse_number, lambda n: _fill("1,", n, "answer: ")),
)


def time_per_call(case: WorstInput, text: str, repeats: int, min_loop_s: float = 0.01) -> float:
    """Seconds per call: the best of ``repeats`` timings of a loop of calls lasting at least ``min_loop_s``."""
    case.call(text)  # warm up (imports, caches)
    loops = 1
    while True:
        started = time.perf_counter()
        for _ in range(loops):
            case.call(text)
        elapsed = time.perf_counter() - started
        if elapsed >= min_loop_s or loops >= 1 << 16:
            break
        loops *= 2
    best = elapsed / loops
    for _ in range(repeats - 1):
        started = time.perf_counter()
        for _ in range(loops):
            case.call(text)
        best = min(best, (time.perf_counter() - started) / loops)
    return best


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=8000, help="the smaller input size in characters (default 8000)")
    parser.add_argument("--quick", action="store_true", help="n=5000 and fewer repeats; also LLAMABOT_BENCH_QUICK=1")
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    n = 5000 if quick else args.n
    repeats = 3 if quick else 7
    worst_ratio, worst_case, worst_ms_per_kb = 0.0, 0, 0.0
    print(f"{'#':>2} {'parser':<22} {'input':<28} {'n ms':>8} {'2n ms':>8} {'ratio':>6} {'ms/kB':>7}")
    for index, case in enumerate(WORST_INPUTS):
        small, large = case.make(n), case.make(2 * n)
        t_small = time_per_call(case, small, repeats)
        t_large = time_per_call(case, large, repeats)
        ratio = t_large / t_small if t_small > 0 else 1.0
        ms_per_kb = t_large * 1000 / (len(large) / 1000)
        print(f"{index:>2} {case.parser:<22} {case.kind:<28} {t_small * 1000:>8.3f} {t_large * 1000:>8.3f} "
              f"{ratio:>6.2f} {ms_per_kb:>7.4f}")
        if ratio > worst_ratio:
            worst_ratio, worst_case = ratio, index
        worst_ms_per_kb = max(worst_ms_per_kb, ms_per_kb)
    print(f"RESULT worst_doubling_ratio={worst_ratio:.2f} worst_case={worst_case} "
          f"worst_ms_per_kb={worst_ms_per_kb:.4f} n={n} quick={int(quick)}")


if __name__ == "__main__":
    main()
