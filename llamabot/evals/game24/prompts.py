"""Prompts for the Game of 24: the Tree-of-Thoughts prompts, and the IO and CoT baselines. Pure.

ToT (after the paper's *propose* and *value* prompts): a thought is one step ``a op b = c``. Generation and
evaluation share one system prompt, so a local model reuses its cached prefix across calls. The game shows
the numbers left after each step (tracked by :mod:`.steps`, from the model's own claimed results) and,
for the last number, whether it is 24; it never checks the model's arithmetic. The model proposes the steps and
scores them. IO and CoT are the paper's few-shot baselines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from llamabot.evals.game24.replies import (
    MAX_PAIRS,
    PAIR_OPERATIONS,
    finishing_steps,
    number_pairs,
    pair_key,
    pairs_schema,
    pairs_thoughts,
    results_entry,
    results_score,
    results_shape,
    tries_entry,
)
from llamabot.evals.game24.steps import (
    expression_from_steps,
    format_number,
    format_numbers,
    numbers_left,
    parse_step,
    step_violation,
)
from llamabot.models.tool_call_text import JSON_FAILURES
from llamabot.reasoning.tot.messages import (
    CallLLMStream,
    EvaluateThoughts,
    GenerateThoughts,
    ModelDirective,
    Phase,
    ThoughtEntry,
)
from llamabot.reasoning.tot.parsing import NEXT_KEY
from llamabot.reasoning.tot.prompts import ToTPrompts, request_of, scores_schema

#: ToT defaults for the Game of 24 on a small local model: three steps, only full paths count as answers,
#: and budgets in model calls and nodes (not seconds, so a result does not depend on the machine's speed):
#: at most 14 calls and 45 nodes per puzzle, 6 proposals per expansion (with three numbers left, both steps of each
#: of the three pairs: ``Game24Prompts(pair_steps=True)``), no convergence stop (a search ends on its budget or an
#: answer). Measured on the hard dev sample with the evaluator writing the results of the last two numbers
#: (``last_results``) and the steps proposed pair by pair (``pair_steps``), both defaults: see
#: docs/design/tot/tot-EARS.md. A wall-clock limit stays available (``max_duration_ms``, ``--max-seconds``), off by
#: default.
GAME24_TOT_OPTIONS: Mapping[str, Any] = MappingProxyType({
    "branching_factor": 6,
    "max_depth": 3,
    "min_depth": 3,
    "traversal_strategy": "best_first",
    "max_nodes": 45,
    "max_model_calls": 14,
    "max_duration_ms": None,
    "top_k": 3,
    "convergence_window": 1,
})

GAME24_SYSTEM = """You are an expert at the Game of 24: combine the given numbers with + - * / to make exactly 24, \
using each number exactly once.
We solve it in steps. A step takes two of the numbers left, combines them with one operation, and replaces them \
by the result. Write a step as "a op b = c (left: ...)".
Possible next steps for the numbers 4 4 6 8 (each one starts from these same four numbers):
4 + 8 = 12 (left: 4 6 12)
6 - 4 = 2 (left: 2 4 8)
8 / 4 = 2 (left: 2 4 6)
4 * 6 = 24 (left: 4 8 24)
8 - 6 = 2 (left: 2 4 4)
6 + 8 = 14 (left: 4 4 14)
A solution for 4 4 6 8, one step after another:
4 + 8 = 12 (left: 4 6 12)
6 - 4 = 2 (left: 2 12)
2 * 12 = 24 (left: 24)
A candidate step scores 1 if the numbers it leaves can surely make 24, 0.5 if maybe, 0 if they cannot. Examples:
4 + 8 = 12 -> left: 4 6 12 -> 1, because (12 - 6) * 4 = 24
4 * 4 = 16 -> left: 6 8 16 -> 0, no way to 24
6 - 4 = 2 -> left: 2 4 8 -> 1, because (4 + 8) * 2 = 24
2 * 12 = 24 -> left: 24 (the last number, it is 24) -> 1
12 - 2 = 10 -> left: 10 (the last number, not 24) -> 0
Reply with JSON only."""

#: The brief system prompt (``Game24Prompts(brief=True)``, opt-in: half the tokens, one puzzle fewer solved of the
#: 30 hard dev puzzles, 17 against 18, both with finish steps): the rules only. Qwen's tokenizer reads
#: every digit as a token, so :data:`GAME24_SYSTEM`'s worked examples cost about 470 prompt tokens on every call;
#: the brief prompts give an example only in the turns that need one (:data:`BRIEF_PROPOSAL_EXAMPLE`,
#: :data:`BRIEF_SCORE_EXAMPLE`) and show the results' JSON shape once.
GAME24_BRIEF_SYSTEM = """You play the Game of 24: combine the given numbers with + - * / to make exactly 24, using \
each number exactly once. A step takes two of the numbers left, combines them with one operation and replaces them \
by its result. Reply with JSON only."""
BRIEF_PROPOSAL_EXAMPLE = "For example, from 4 4 6 8 the alternatives include 4 + 8 = 12, 6 - 4 = 2, 8 / 4 = 2, 4 * 6 = 24. "
BRIEF_SCORE_EXAMPLE = "For example, 4 6 12 scores 1 ((12 - 6) * 4 = 24) and 6 8 16 scores 0. "

IO_PROMPT = """Use numbers and basic arithmetic operations (+ - * /) to obtain 24. Use each input number exactly once.
Input: 4 4 6 8
Answer: (4 + 8) * (6 - 4) = 24
Input: 2 9 10 12
Answer: 2 * 12 * (10 - 9) = 24
Input: 4 9 10 13
Answer: (13 - 9) * (10 - 4) = 24
Input: 1 4 8 8
Answer: (8 / 4 + 1) * 8 = 24
Input: 5 5 5 9
Answer: 5 + 5 + 5 + 9 = 24
Reply with one line: Answer: <expression> = 24"""

COT_PROMPT = """Use numbers and basic arithmetic operations (+ - * /) to obtain 24. Each step, you are only allowed \
to choose two of the remaining numbers to obtain a new number.
Input: 4 4 6 8
Steps:
4 + 8 = 12 (left: 4 6 12)
6 - 4 = 2 (left: 2 12)
2 * 12 = 24 (left: 24)
Answer: (6 - 4) * (4 + 8) = 24
Input: 2 9 10 12
Steps:
12 * 2 = 24 (left: 9 10 24)
10 - 9 = 1 (left: 1 24)
24 * 1 = 24 (left: 24)
Answer: (12 * 2) * (10 - 9) = 24
Input: 4 9 10 13
Steps:
13 - 10 = 3 (left: 3 4 9)
9 - 3 = 6 (left: 4 6)
4 * 6 = 24 (left: 24)
Answer: 4 * (9 - (13 - 10)) = 24
Write the steps, then one line: Answer: <expression> = 24"""


def baseline_user(puzzle: str) -> str:
    """The user turn of the IO and CoT baselines."""
    return f"Input: {puzzle}"


def shown_step(text: str) -> str:
    """A step as the prompts show it: ``a op b = c`` as the game reads it, without the model's own notes (a
    ``(left: ...)`` it wrote may be wrong; the game shows the numbers left itself). Unreadable text as it is."""
    step = parse_step(text)
    if step is None:
        return text
    return f"{format_number(step.a)} {step.op} {format_number(step.b)} = {format_number(step.result)}"


def shown_path_step(problem: str, path: Sequence[str]) -> str:
    """The last step of ``path`` as the game reads it, with the numbers left that the game computed
    (``"12 / 12 = 1 (left: 7 13 1)"``), never the model's own ``(left: ...)`` note; the prompts and the CLI's
    tree show steps so. A path that breaks the rules shows its last step without numbers left."""
    left = numbers_left(problem, path)
    return shown_step(path[-1]) + (f" (left: {format_numbers(left)})" if left is not None else "")


def _state(problem: str, path: tuple[str, ...]) -> tuple[list[str], str | None]:
    lines = [f"Numbers: {problem}"]
    if path:
        lines.append("Steps so far:")
        lines.extend(shown_path_step(problem, path[:depth]) for depth in range(1, len(path) + 1))
    left = numbers_left(problem, path)
    return lines, format_numbers(left) if left is not None else None


@dataclass(frozen=True)
class Game24Prompts(ToTPrompts):
    """ToT prompts for the Game of 24; ``answer`` composes the expression a solution path builds.

    Use them with ``min_depth = max_depth = 3`` (for four numbers): only a full path of steps is an answer.
    ``tries``: the evaluator writes, for each candidate, the expression it tries on the numbers left before it
    scores it (``{"scores": {"t1": {"try": "(12 - 6) * 4 = 24", "score": 1}}}``), as the system prompt's scoring
    examples do; off: a bare score per candidate.
    ``last_results``: for a candidate that leaves two numbers, the evaluator writes the four results of those
    numbers instead of a score (``{"t2": {"sum": "14 + 10 = 24", "difference": "14 - 10 = 4", ...}}``), and the
    candidate scores 1 when one of the results it wrote is 24, else 0 (the paper's value prompt: *sure* when its
    own arithmetic reaches 24, *impossible* when it does not); other candidates are scored as before.
    ``finish_steps`` (with ``last_results``): a result the evaluator wrote that reaches 24 (``"14 + 10 = 24"``)
    is also that candidate's last step (:func:`finishing_steps`, the reply's ``"next"``): the machine files it
    as the candidate's child, checked by the rules like any proposal, so a search whose evaluator already wrote
    the last step ends there instead of spending a generation and an evaluation call on writing it again.
    ``pair_steps``: where three or more numbers are left and they make at most :data:`MAX_PAIRS` distinct
    pairs, and the expansion asks for enough thoughts to keep two steps of every pair (``branching_factor`` 6 for
    three pairs), the model proposes two steps for each pair, one that adds or multiplies it and one that subtracts or
    divides it (``{"pairs": {"1 and 11": ["11 + 1 = 12", "11 - 1 = 10"], ...}}``, each step held to its pair and
    operations by the grammar), so that every pair is tried, and with a subtraction or a division, not only the
    first numbers listed with the same operation; the model still chooses each operation and writes the results.
    With fewer thoughts asked for, proposals stay free (a cut would keep only the ``+``/``*`` steps). On by default,
    with ``branching_factor`` 6 in :data:`GAME24_TOT_OPTIONS` and the CLI: measured
    on the hard dev puzzles (docs/design/tot/tot-EARS.md).
    """

    generation_prompt: str = ""  # empty: the game's system prompt (brief or full, see ``brief``)
    evaluation_prompt: str = ""
    tries: bool = False
    last_results: bool = True
    pair_steps: bool = True
    brief: bool = False
    finish_steps: bool = True

    def options(self) -> dict[str, bool]:
        """The switches of these prompts, as a report records them."""
        return {"tries": self.tries, "last_results": self.last_results, "pair_steps": self.pair_steps,
                "brief": self.brief, "finish_steps": self.finish_steps}

    def system_prompt(self, phase: Phase) -> str:
        """The prompt given for ``phase``, else :data:`GAME24_BRIEF_SYSTEM` (``brief``) or :data:`GAME24_SYSTEM`:
        one system prompt for both phases, a shared cached prefix."""
        return super().system_prompt(phase) or (GAME24_BRIEF_SYSTEM if self.brief else GAME24_SYSTEM)

    def prompt_texts(self, problem: str = "1 2 3 4", path: tuple[str, ...] = ("1 + 2 = 3",)) -> tuple[str, ...]:
        """As :meth:`ToTPrompts.prompt_texts`, plus, with ``pair_steps``, a generation turn asking for two steps per
        pair (so that a change to that template changes the version too)."""
        texts = super().prompt_texts(problem, path)
        if not self.pair_steps:
            return texts
        pairs = GenerateThoughts("version", "n0", problem, path, MAX_PAIRS * len(PAIR_OPERATIONS))
        return (*texts, self.generation_user(pairs))

    def generation_user(self, directive: GenerateThoughts) -> str:
        lines, left = _state(directive.problem, directive.path)
        if left is None:
            lines.append("Numbers left: unknown (a step above is not valid).")
        else:
            lines.append(f"Numbers left: {left}")
        pairs = self._pairs(directive)
        if pairs:
            lines.append(
                f"Propose possible next steps, two for each pair of the numbers left "
                f"({'; '.join(pair_key(p) for p in pairs)}): one that adds or multiplies the pair, one that "
                "subtracts or divides it (larger number first), each with its exact result. Choose the operations "
                f"that can help make 24. The steps are alternatives: none continues from another. "
                f"JSON: {self._pairs_shape(pairs)}"
            )
            return "\n".join(lines)
        last = left is not None and len(left.split()) == 2
        lines.append(
            f"Propose {directive.count} different possible next steps. Each one starts from the numbers left "
            f"({left or '?'}): it combines two of them with + - * / and gives the exact result and the numbers it "
            "leaves. The steps are alternatives: none continues from another. "
            + ("These are the last two numbers: try every operation on them. " if last else "")
            + (BRIEF_PROPOSAL_EXAMPLE if self.brief and not last else "")
            + 'JSON: {"thoughts": ["a op b = c (left: ...)", ...]}'
        )
        return "\n".join(lines)

    def evaluation_user(self, directive: EvaluateThoughts) -> str:
        lines, _ = _state(directive.problem, directive.path)
        lines.append("Candidate next steps, each with the numbers it leaves:")
        two = self._two_left(directive)
        for thought in directive.thoughts:
            left = numbers_left(directive.problem, (*directive.path, thought.content))
            if left is None:
                after = "not a valid step"
            elif len(left) == 1:
                after = f"left: {format_numbers(left)} (the last number, {'it is 24' if left[0] == 24 else 'not 24'})"
            else:
                after = f"left: {format_numbers(left)}"
            lines.append(f"{thought.id}: {shown_step(thought.content)} -> {after}")
        if self.brief and two and len(two) == len(directive.thoughts) and not self.tries:
            lines.append("For each candidate, write the sum, difference (larger minus smaller), product and quotient "
                         "(larger over smaller) of the two numbers it leaves, each as \"a op b = value\": one of them "
                         f"is 24 or none is. JSON: {self._scores_shape(directive.thoughts, two)}")
            return "\n".join(lines)
        lines.append(
            ("For each candidate, first try to make 24 from the numbers it leaves (write the expression you try), "
             "then score it" if self.tries else "Score each candidate")
            + " from 0 to 1: 1 if its numbers left surely make 24 (or are exactly 24), "
            "0.5 if maybe, 0 if they cannot or the step's arithmetic is wrong. "
            + (BRIEF_SCORE_EXAMPLE if self.brief and len(two) < len(directive.thoughts) else "")
            + ("For a candidate that leaves two numbers, write instead their sum, difference (larger minus smaller), "
               "product and quotient (larger over smaller), each as \"a op b = value\": one of them is 24 or none is. "
               if two else "")
            + f"JSON: {self._scores_shape(directive.thoughts, two)}"
        )
        return "\n".join(lines)

    def _pairs(self, directive: GenerateThoughts) -> tuple[tuple[Fraction, Fraction], ...]:
        """With ``pair_steps``, the pairs a generation proposes steps for (see the class); else none."""
        if not self.pair_steps:
            return ()
        left = numbers_left(directive.problem, directive.path)
        if left is None or len(left) < 3:
            return ()
        pairs = number_pairs(left)
        fits = len(pairs) <= MAX_PAIRS and len(pairs) * len(PAIR_OPERATIONS) <= directive.count
        return pairs if fits else ()

    @staticmethod
    def _pairs_shape(pairs: Sequence[tuple[Fraction, Fraction]]) -> str:
        def shape(pair: tuple[Fraction, Fraction]) -> str:
            big, small = (format_number(n) for n in sorted(pair, reverse=True))
            steps = ", ".join(f'"{big} {" or ".join(ops.strip("[]"))} {small} = <result>"' for ops in PAIR_OPERATIONS)
            return f'"{pair_key(pair)}": [{steps}]'
        return '{"pairs": {' + ", ".join(shape(p) for p in pairs) + "}}"

    def _two_left(self, directive: EvaluateThoughts) -> dict[str, tuple[Fraction, ...]]:
        """With ``last_results``, the candidates that leave two numbers (they get results): id -> those numbers."""
        if not self.last_results:
            return {}
        lefts = {t.id: numbers_left(directive.problem, (*directive.path, t.content)) for t in directive.thoughts}
        return {key: left for key, left in lefts.items() if left is not None and len(left) == 2}

    def _scores_shape(self, thoughts: Sequence[ThoughtEntry],
                      two: Mapping[str, Sequence[Fraction]] = MappingProxyType({})) -> str:
        each = '{"try": "<expression> = <value>", "score": <score>}' if self.tries else "<score>"
        if self.brief and two:  # the results' shape once, not once per candidate
            return ('{"scores": {' + ", ".join(f'"{t.id}": {"<results>" if t.id in two else each}' for t in thoughts)
                    + '}} where <results> is {"sum": "a + b = <value>", "difference": "a - b = <value>", '
                    '"product": "a * b = <value>", "quotient": "a / b = <value>"}, a the larger of the two numbers')
        return '{"scores": {' + ", ".join(
            f'"{t.id}": {results_shape(two[t.id]) if t.id in two else each}' for t in thoughts) + "}}"

    def repair_user(self, directive: CallLLMStream) -> str:
        request = directive.request
        pairs = self._pairs(request) if isinstance(request, GenerateThoughts) else ()
        if pairs:
            return f"Your reply could not be read: {directive.error}. Reply again with only this JSON: {self._pairs_shape(pairs)}"
        if not (self.tries or self.last_results) or not isinstance(request, EvaluateThoughts):
            return super().repair_user(directive)
        return (f"Your reply could not be read: {directive.error}. Reply again with only this JSON: "
                f"{self._scores_shape(request.thoughts, self._two_left(request))}")

    def response_format(self, directive: ModelDirective) -> dict[str, Any]:
        request = request_of(directive)
        pairs = self._pairs(request) if isinstance(request, GenerateThoughts) else ()
        if pairs:
            return {"type": "json_schema", "json_schema": {"name": "tot_pair_steps",
                                                           "schema": pairs_schema(pairs)}}
        if not (self.tries or self.last_results) or not isinstance(request, EvaluateThoughts):
            return super().response_format(directive)
        schema = scores_schema([t.id for t in request.thoughts], tries_entry() if self.tries else None,
                               {i: results_entry(left) for i, left in self._two_left(request).items()})
        name = "tot_scores_with_tries" if self.tries else "tot_scores"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}

    def read_reply(self, directive: ModelDirective, text: str) -> str:
        """With ``last_results``, an evaluation reply with each results entry replaced by the score its results
        give (:func:`results_score`); with ``pair_steps``, a generation reply written pair by pair as the list of
        its steps (:func:`pairs_thoughts`); any other reply, or one that is not JSON, as it is."""
        request = request_of(directive)
        wanted = self.pair_steps if isinstance(request, GenerateThoughts) else self.last_results
        if not wanted:
            return text
        try:
            reply = json.loads(text)
        except JSON_FAILURES:
            return text
        if isinstance(request, GenerateThoughts):
            steps = pairs_thoughts(reply)
            return text if steps is None else json.dumps({"thoughts": steps})
        scores = reply.get("scores") if isinstance(reply, dict) else None
        if not isinstance(scores, dict):
            return text
        read = {key: results_score(entry) for key, entry in scores.items()}
        if all(score is None for score in read.values()):
            return text
        scored: dict[str, Any] = {"scores": {key: entry if read[key] is None else read[key]
                                             for key, entry in scores.items()}}
        finishing = {key: steps for key, entry in scores.items() if (steps := finishing_steps(entry))} \
            if self.finish_steps else {}
        if finishing:
            scored[NEXT_KEY] = finishing
        return json.dumps(scored)

    def step_rules(self, problem: str, path: tuple[str, ...], thought: str) -> str | None:
        """Wrong arithmetic, a number that is not left, or no ``a op b = c`` at all (see
        :func:`~llamabot.evals.game24.steps.step_violation`)."""
        return step_violation(problem, path, thought)

    def answer(self, problem: str, path: tuple[str, ...]) -> str | None:
        return expression_from_steps(problem, path)


def game24_prompts() -> Game24Prompts:
    """The default Game-of-24 prompts (a fresh object: prompts are configuration, never shared state)."""
    return Game24Prompts()
