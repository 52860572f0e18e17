"""Prompts of the Tree-of-Thoughts driver: how each directive becomes chat messages. Pure.

:class:`ToTPrompts` renders a :class:`GenerateThoughts`, :class:`EvaluateThoughts` or :class:`CallLLMStream`
directive into messages and a ``response_format`` (a JSON schema; the embedded model enforces it by grammar).
Override the two system prompts (``replace(prompts, generation_prompt=...)``, or ``ToTBot(generation_prompt=...)``)
or subclass it for a task (as :mod:`llamabot.evals.game24.prompts` does for the Game of 24). The evaluator always sees the problem and the path
to the candidates (a fix of the seed, whose evaluator saw only the candidate thoughts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llamabot.models.messages import Message, assistant, system, user
from llamabot.reasoning.tot.messages import (
    CallLLMStream,
    EvaluateThoughts,
    GenerateThoughts,
    ModelDirective,
    Phase,
    ThoughtEntry,
)

DEFAULT_GENERATION_PROMPT = (
    "You are a careful problem solver who works in small steps. Given a problem and the steps taken so far, "
    "propose distinct next steps: each materially different from the others, concise, and moving toward a "
    'solution. Reply with JSON only: {"thoughts": ["<step>", "<step>"]}'
)
DEFAULT_EVALUATION_PROMPT = (
    "You judge partial solutions. Given a problem, the steps taken so far and candidate next steps, score each "
    "candidate from 0.0 to 1.0 for how likely it leads to a correct solution (is it correct? does it make "
    "progress? how close is it to a full solution?). A complete and correct solution scores 1.0. "
    'Reply with JSON only: {"scores": {"t1": <score>, "t2": <score>}} using the candidate ids.'
)
MAX_THOUGHT_CHARS = 300


def thoughts_schema(count: int) -> dict[str, Any]:
    """JSON schema of a generation reply: ``{"thoughts": [1..count strings]}``."""
    return {
        "type": "object",
        "properties": {
            "thoughts": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_THOUGHT_CHARS},
                "minItems": 1,
                "maxItems": max(1, count),
            }
        },
        "required": ["thoughts"],
        "additionalProperties": False,
    }


def scores_schema(ids: list[str], entry: dict[str, Any] | None = None,
                  entries: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """JSON schema of an evaluation reply: ``{"scores": {<every id>: number}}`` (or ``entry``'s schema per id;
    ``entries``: the schema of particular ids, in place of ``entry``)."""
    entries = entries or {}
    return {
        "type": "object",
        "properties": {
            "scores": {
                "type": "object",
                "properties": {i: entries.get(i) or entry or {"type": "number"} for i in ids},
                "required": list(ids),
                "additionalProperties": False,
            }
        },
        "required": ["scores"],
        "additionalProperties": False,
    }


def request_of(directive: ModelDirective) -> GenerateThoughts | EvaluateThoughts:
    """The generate or evaluate request a directive is about (a repair call's is the request it repairs)."""
    return directive.request if isinstance(directive, CallLLMStream) else directive


def _steps(path: tuple[str, ...]) -> list[str]:
    if not path:
        return ["Steps so far: none."]
    return ["Steps so far:", *(f"{index}. {step}" for index, step in enumerate(path, 1))]


@dataclass(frozen=True)
class ToTPrompts:
    """Turns directives into chat messages. ``generation_prompt`` / ``evaluation_prompt`` are the system
    prompts; the ``*_user`` methods write the user turn; ``answer`` reads the final answer off a solution path."""

    generation_prompt: str = DEFAULT_GENERATION_PROMPT
    evaluation_prompt: str = DEFAULT_EVALUATION_PROMPT

    def generation_user(self, directive: GenerateThoughts) -> str:
        which = "first" if not directive.path else "next"
        return "\n".join(
            [f"Problem: {directive.problem}", *_steps(directive.path),
             f"Propose {directive.count} different {which} steps."]
        )

    def evaluation_user(self, directive: EvaluateThoughts) -> str:
        candidates = [f"{t.id}: {t.content}" for t in directive.thoughts]
        return "\n".join(
            [f"Problem: {directive.problem}", *_steps(directive.path), "Candidate next steps:", *candidates,
             f"Score every candidate ({', '.join(t.id for t in directive.thoughts)})."]
        )

    def repair_user(self, directive: CallLLMStream) -> str:
        if directive.phase == "generation":
            shape = '{"thoughts": ["<step>", "<step>"]}'
        else:
            ids = [t.id for t in directive.request.thoughts] if isinstance(directive.request, EvaluateThoughts) else []
            shape = '{"scores": {' + ", ".join(f'"{i}": <score between 0 and 1>' for i in ids) + "}}"
        return f"Your reply could not be read: {directive.error}. Reply again with only this JSON: {shape}"

    def messages(self, directive: ModelDirective) -> list[Message]:
        """The chat messages for one model directive (a repair repeats the request, the reply and the error)."""
        if isinstance(directive, CallLLMStream):
            return [*self.messages(directive.request), assistant(directive.raw_text), user(self.repair_user(directive))]
        if isinstance(directive, GenerateThoughts):
            return [system(self.system_prompt("generation")), user(self.generation_user(directive))]
        return [system(self.system_prompt("evaluation")), user(self.evaluation_user(directive))]

    def system_prompt(self, phase: Phase) -> str:
        """The system prompt of ``phase``'s calls (``generation_prompt`` or ``evaluation_prompt``)."""
        return self.generation_prompt if phase == "generation" else self.evaluation_prompt

    def response_format(self, directive: ModelDirective) -> dict[str, Any]:
        """The OpenAI ``response_format`` for the directive's reply."""
        request = request_of(directive)
        if isinstance(request, GenerateThoughts):
            name, schema = "tot_thoughts", thoughts_schema(request.count)
        else:
            name, schema = "tot_scores", scores_schema([t.id for t in request.thoughts])
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}

    def read_reply(self, directive: ModelDirective, text: str) -> str:
        """A reply as the machine reads it (by default the text itself): a task whose reply format has more
        than scores (the Game of 24's results) turns it into the scores that format stands for."""
        return text

    def step_rules(self, problem: str, path: tuple[str, ...], thought: str) -> str | None:
        """The rule of the problem that ``thought``, proposed after ``path``, breaks, or ``None`` (by default a
        problem has no rules: every thought is kept). Only rules: never a judgement of whether it leads anywhere."""
        return None

    def answer(self, problem: str, path: tuple[str, ...]) -> str | None:
        """The answer a solution path gives; by default its last thought."""
        return path[-1] if path else None

    def prompt_texts(self, problem: str = "1 2 3 4", path: tuple[str, ...] = ("1 + 2 = 3",)) -> tuple[str, ...]:
        """The texts these prompts send, for a report's prompt version: both system prompts and the user turns
        rendered for one fixed example (so that a change to any template changes the version)."""
        generate = GenerateThoughts("version", "n0", problem, path, 3)
        evaluate = EvaluateThoughts("version", "n0", problem, path, (ThoughtEntry("t1", "3 * 3 = 9"),))
        repair = CallLLMStream("version", "generation", generate, "?", "not JSON")
        return (self.system_prompt("generation"), self.system_prompt("evaluation"), self.generation_user(generate),
                self.evaluation_user(evaluate), self.repair_user(repair))
