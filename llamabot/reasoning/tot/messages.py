"""What goes into the Tree-of-Thoughts machine (messages) and what comes out (directives). Pure values.

Messages (the seed's ``{:start, ...}`` tuples, as typed dataclasses):

- :class:`Start` begins a search; :class:`ThoughtsGenerated` / :class:`ThoughtsEvaluated` hand over thoughts or
  scores a driver parsed itself; :class:`LLMResult` hands over a model reply (ok or error) for the machine to
  parse; :class:`LLMPartial` is one streamed piece of that reply.

Directives (effects the driver performs, then answers with a message carrying the same ``call_id``):

- :class:`GenerateThoughts`, :class:`EvaluateThoughts`: one model call each;
- :class:`CallLLMStream`: a repair call after a reply could not be parsed;
- :class:`RequestError`: a ``start`` that was refused (``busy``, ``finished`` or ``invalid``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Phase = Literal["generation", "evaluation"]


# -- messages -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Start:
    """Start a search for ``prompt`` (the problem). ``call_id`` names the first generation call."""

    prompt: str
    call_id: str


@dataclass(frozen=True, slots=True)
class ThoughtsGenerated:
    """The candidate thoughts for the node being expanded, already parsed by the driver."""

    call_id: str
    thoughts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ThoughtsEvaluated:
    """Scores in [0, 1] for the pending thoughts, keyed by thought id (``t1``, ``t2``...), and the next steps the
    evaluation wrote for some of them (``continuations``: id -> steps, added as their children)."""

    call_id: str
    scores: Mapping[str, float] = field(hash=False)
    continuations: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class LLMResult:
    """A model reply to the call ``call_id``: its ``text`` (ok) or an ``error`` text, and its token ``usage``
    (``prompt_tokens``, ``completion_tokens``...)."""

    call_id: str
    text: str | None = None
    error: str | None = None
    usage: Mapping[str, int] | None = field(default=None, hash=False)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class LLMPartial:
    """One streamed piece of the reply to ``call_id``. Only ``chunk_type == "content"`` is kept."""

    call_id: str
    delta: str
    chunk_type: str = "content"


Message = Start | ThoughtsGenerated | ThoughtsEvaluated | LLMResult | LLMPartial


# -- directives ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThoughtEntry:
    """A thought waiting for its score: ``id`` is ``t1``, ``t2``... in generation order."""

    id: str
    content: str


@dataclass(frozen=True, slots=True)
class GenerateThoughts:
    """Ask for ``count`` distinct next thoughts after ``path`` (the thoughts from the root down to the node
    ``node_id``, the problem excluded)."""

    call_id: str
    node_id: str
    problem: str
    path: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True)
class EvaluateThoughts:
    """Ask for a score of each of ``thoughts``, the candidate children of ``node_id``. The evaluator sees the
    problem and ``path``, so it judges each thought in its place (root -> ... -> node -> thought)."""

    call_id: str
    node_id: str
    problem: str
    path: tuple[str, ...]
    thoughts: tuple[ThoughtEntry, ...]


@dataclass(frozen=True, slots=True)
class CallLLMStream:
    """Repair: the reply to ``request`` could not be parsed (``error`` says why; ``raw_text`` is what came).
    The driver asks again, showing the model its reply and the error."""

    call_id: str
    phase: Phase
    request: GenerateThoughts | EvaluateThoughts
    raw_text: str
    error: str


@dataclass(frozen=True, slots=True)
class RequestError:
    """A refused ``start``: ``reason`` is ``busy`` (a search is running), ``finished`` or ``invalid``."""

    call_id: str
    reason: str
    message: str


Directive = GenerateThoughts | EvaluateThoughts | CallLLMStream | RequestError
ModelDirective = GenerateThoughts | EvaluateThoughts | CallLLMStream


def phase_of(directive: ModelDirective) -> Phase:
    """Whether a model directive belongs to thought generation or to evaluation."""
    if isinstance(directive, CallLLMStream):
        return directive.phase
    return "generation" if isinstance(directive, GenerateThoughts) else "evaluation"


def add_usage(total: Mapping[str, int], extra: Mapping[str, int] | None) -> dict[str, int]:
    """Sum token counts key by key; ``total_tokens`` is derived when a reply does not give it."""
    if not extra:
        return dict(total)
    merged = dict(total)
    numbers = {k: int(v) for k, v in extra.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if "total_tokens" not in numbers:
        numbers["total_tokens"] = numbers.get("prompt_tokens", 0) + numbers.get("completion_tokens", 0)
    for key, value in numbers.items():
        merged[key] = merged.get(key, 0) + value
    return merged
