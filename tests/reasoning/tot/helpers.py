"""Scripted models and machine drivers shared by the Tree-of-Thoughts tests."""

from __future__ import annotations

import re
from fractions import Fraction
from itertools import combinations

from llamabot.evals.game24.steps import format_number
from llamabot.models.reply import ModelRequest
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.tot.machine import Env, ToTMachine, new_machine, update
from llamabot.reasoning.tot.messages import (
    EvaluateThoughts,
    GenerateThoughts,
    LLMResult,
    Start,
    ThoughtsEvaluated,
)


def schema_name(request: ModelRequest) -> str:
    return request.response_format["json_schema"]["name"]


def requested_ids(request: ModelRequest) -> list[str]:
    return request.response_format["json_schema"]["schema"]["properties"]["scores"]["required"]


def requested_count(request: ModelRequest) -> int:
    return request.response_format["json_schema"]["schema"]["properties"]["thoughts"]["maxItems"]


def solvable(numbers: list[Fraction]) -> bool:
    """Brute force: can these numbers make exactly 24?"""
    if len(numbers) == 1:
        return numbers[0] == 24
    for i, j in combinations(range(len(numbers)), 2):
        a, b = numbers[i], numbers[j]
        rest = [n for k, n in enumerate(numbers) if k not in (i, j)]
        results = {a + b, a - b, b - a, a * b}
        if b:
            results.add(a / b)
        if a:
            results.add(b / a)
        if any(solvable([*rest, r]) for r in results):
            return True
    return False


def _steps(numbers: list[Fraction]) -> list[tuple[str, list[Fraction]]]:
    out = []
    for i, j in combinations(range(len(numbers)), 2):
        a, b = max(numbers[i], numbers[j]), min(numbers[i], numbers[j])
        rest = [n for k, n in enumerate(numbers) if k not in (i, j)]
        options = [("+", a + b), ("-", a - b), ("*", a * b)] + ([("/", a / b)] if b else [])
        for op, value in options:
            text = f"{format_number(a)} {op} {format_number(b)} = {format_number(value)}"
            out.append((text, [*rest, value]))
    return out


def _left(text: str) -> list[Fraction]:
    match = re.search(r"Numbers left: ([0-9/ ]+)", text)
    return [Fraction(n) for n in match.group(1).split()] if match else []


def _pair_steps(request: ModelRequest) -> dict[str, list[str]]:
    """For each pair a pair-steps request names, its sum (or product) and its difference (or quotient), the one
    that keeps the puzzle solvable first (right arithmetic)."""
    left = _left(request.last_user_text)
    pairs = {}
    for key in request.response_format["json_schema"]["schema"]["properties"]["pairs"]["required"]:
        a, b = sorted((Fraction(n) for n in key.split(" and ")), reverse=True)
        rest = list(left)
        rest.remove(a)
        rest.remove(b)
        steps = []
        for ops in (("+", "*"), ("-", "/")):
            values = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}
            choices = [op for op in ops if values[op] is not None]
            op = next((op for op in choices if solvable([*rest, values[op]])), choices[0])
            steps.append(f"{format_number(a)} {op} {format_number(b)} = {format_number(values[op])}")
        pairs[key] = steps
    return pairs


def game24_oracle(request: ModelRequest):
    """A scripted 'perfect' Game-of-24 model: proposes steps that keep the puzzle solvable first (free, or two
    per pair for a pair-steps request), and scores each candidate 1 if its numbers left can make 24, else 0.
    IO/CoT requests get a fixed wrong answer."""
    if request.response_format is None:
        return "Answer: 1 + 2 = 24"
    text = request.last_user_text
    if schema_name(request) == "tot_thoughts":
        steps = sorted(_steps(_left(text)), key=lambda s: not solvable(s[1]))
        return json_reply({"thoughts": [s for s, _ in steps[: requested_count(request)]]})
    if schema_name(request) == "tot_pair_steps":
        return json_reply({"pairs": _pair_steps(request)})
    scores = {}
    for line in text.splitlines():
        match = re.match(r"(t\d+): .* -> left: ([0-9/ ]+)(?: \(.*\))?$", line)
        if match:
            scores[match.group(1)] = 1.0 if solvable([Fraction(n) for n in match.group(2).split()]) else 0.0
        elif re.match(r"t\d+: ", line):
            scores[line.split(":")[0]] = 0.0
    return json_reply({"scores": scores})


def oracle_model(**kwargs) -> ScriptedModel:
    return ScriptedModel(responder=game24_oracle, **kwargs)


def drive(machine: ToTMachine, generate, evaluate, env: Env | None = None, limit: int = 200):
    """Run the machine to the end without a model: ``generate(directive) -> list[str]`` answers each
    generation and ``evaluate(directive) -> dict`` each evaluation (as ``ThoughtsGenerated``/``ThoughtsEvaluated``
    messages). Returns the final machine and every directive seen, in order."""
    from llamabot.reasoning.tot.messages import ThoughtsGenerated

    machine, directives = update(machine, Start("problem", "run"), env)
    seen = list(directives)
    for _ in range(limit):
        if not directives:
            return machine, seen
        d = directives[0]
        if isinstance(d, GenerateThoughts):
            msg = ThoughtsGenerated(d.call_id, tuple(generate(d)))
        elif isinstance(d, EvaluateThoughts):
            msg = ThoughtsEvaluated(d.call_id, evaluate(d))
        else:
            msg = LLMResult(d.call_id, text="")
        machine, directives = update(machine, msg, env)
        seen.extend(directives)
    raise AssertionError("the machine did not finish")


def fresh(**options) -> ToTMachine:
    return new_machine(**options)
