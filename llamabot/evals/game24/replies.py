"""The Game of 24's reply formats: what the evaluator writes with ``tries`` or ``last_results`` (the schema of
each entry and how it is read: a score, the last steps it wrote) and the pair-steps proposals (their schema and
how they are read as steps). Pure: schemas and readers, no prompt text."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations
from typing import Any

from llamabot.evals.game24.steps import format_number, parse_step


def tries_entry() -> dict[str, Any]:
    """JSON schema of one candidate's entry with tries: ``{"try": str, "score": number}`` (the try first, so the
    score follows it; a try is at most :data:`TRY_CHARS` characters)."""
    return {"type": "object", "properties": {"try": {"type": "string", "maxLength": TRY_CHARS},
                                             "score": {"type": "number"}},
            "required": ["try", "score"], "additionalProperties": False}



#: The longest try an evaluation reply may write per candidate (``(12 - 6) * 4 = 24`` is 18).
TRY_CHARS = 48
#: What the evaluator writes for a candidate that leaves two numbers, with ``last_results``: each ``a op b = c``
#: on those two numbers, the larger first.
RESULT_OPERATORS = {"sum": "+", "difference": "-", "product": "*", "quotient": "/"}
RESULT_FIELDS = tuple(RESULT_OPERATORS)


def _larger_first(pair: Sequence[Fraction]) -> tuple[str, str]:
    big, small = sorted(pair, reverse=True)
    return format_number(big), format_number(small)  # digits, '-' and '/': literal in a pattern as they are


def results_entry(pair: Sequence[Fraction]) -> dict[str, Any]:
    """JSON schema of the results written for a candidate that leaves the two numbers ``pair``
    (``last_results``): ``{"sum": "25 + 1 = <value>", ...}``, each held by its pattern to those two numbers, the
    larger first, so the model writes the values of the right numbers (it computes them; nothing is computed
    for it)."""
    big, small = _larger_first(pair)
    return {"type": "object",
            "properties": {name: {"type": "string", "pattern": f"^{big} [{op}] {small} = {_RESULT_PATTERN}$"}
                           for name, op in RESULT_OPERATORS.items()},
            "required": list(RESULT_FIELDS), "additionalProperties": False}


def results_shape(pair: Sequence[Fraction]) -> str:
    """The results entry of ``pair`` as the evaluation prompt shows it."""
    big, small = _larger_first(pair)
    return "{" + ", ".join(f'"{name}": "{big} {op} {small} = <value>"' for name, op in RESULT_OPERATORS.items()) + "}"


def results_score(entry: Any) -> float | None:
    """The score the evaluator's own results give a candidate that leaves two numbers: 1 when one of the
    results it wrote says 24 (its arithmetic, as it wrote it: nothing is recomputed), else 0; ``None`` for an
    entry that is not results."""
    if not isinstance(entry, dict) or "score" in entry or not any(name in entry for name in RESULT_FIELDS):
        return None
    steps = (parse_step(entry[name]) for name in RESULT_FIELDS if isinstance(entry.get(name), str))
    return 1.0 if any(step is not None and step.result == 24 for step in steps) else 0.0


def finishing_steps(entry: Any) -> list[str]:
    """The results in an evaluator's results entry that say 24 (``["14 + 10 = 24"]``), as it wrote them: the
    candidate's last step, written by the model (nothing is recomputed here; the rules check it as a step)."""
    if results_score(entry) is None:
        return []
    texts = (entry[name].strip() for name in RESULT_FIELDS if isinstance(entry.get(name), str))
    return [text for text in texts if (step := parse_step(text)) is not None and step.result == 24]


#: A proposal written for one pair (``pair_steps``) is ``a op b = c`` on exactly that pair, the result a number.
#: (Written without backslashes: llama.cpp's grammar reader does not take escapes such as ``\.`` in a literal;
#: bounded, so that a long decimal ends.)
_RESULT_PATTERN = r"-?[0-9]{1,7}([.][0-9]{1,4})?(/[0-9]{1,4})?"


def number_pairs(left: Sequence[Fraction]) -> tuple[tuple[Fraction, Fraction], ...]:
    """The distinct pairs of ``left`` (by value, either order; in the order the numbers are listed): what a step
    can combine. ``4 10 4`` makes ``(4, 10)`` and ``(4, 4)``."""
    seen: dict[tuple[Fraction, Fraction], tuple[Fraction, Fraction]] = {}
    for a, b in combinations(left, 2):
        seen.setdefault((min(a, b), max(a, b)), (a, b))
    return tuple(seen.values())


def pair_key(pair: tuple[Fraction, Fraction]) -> str:
    """The name of a pair in a ``pair_steps`` reply: ``"1 and 11"``."""
    return f"{format_number(pair[0])} and {format_number(pair[1])}"


#: ``pair_steps`` applies where the numbers left make at most this many distinct pairs (three numbers, or four
#: with repeats); with more, the model proposes freely.
MAX_PAIRS = 3
#: The two steps a pair gets (``pair_steps``): one that adds or multiplies, one that subtracts or divides. (Split
#: as ``+ -`` / ``* /`` the model took ``+`` and ``*`` for nearly every pair, and the ``-`` or ``/`` steps that hard
#: puzzles need never came; measured in docs/design/tot/tot-EARS.md.)
PAIR_OPERATIONS = ("[+*]", "[-/]")


def pair_step_pattern(pair: tuple[Fraction, Fraction], operations: str) -> str:
    """The pattern of a step on ``pair`` with one of ``operations`` (a character class), the larger number first,
    as the grammar enforces it: ``^(11 [+*] 1) = <result>$``."""
    big, small = (format_number(n) for n in sorted(pair, reverse=True))  # digits, '-', '/': literal as they are
    return f"^({big} {operations} {small}) = {_RESULT_PATTERN}$"


def pairs_schema(pairs: Sequence[tuple[Fraction, Fraction]]) -> dict[str, Any]:
    """JSON schema of a ``pair_steps`` generation reply: ``{"pairs": {<pair>: [<+ or * step>, <- or / step>]}}``."""
    steps = {pair_key(pair): {"type": "array",
                              "prefixItems": [{"type": "string", "pattern": pair_step_pattern(pair, ops)}
                                              for ops in PAIR_OPERATIONS],
                              "items": False, "minItems": len(PAIR_OPERATIONS), "maxItems": len(PAIR_OPERATIONS)}
             for pair in pairs}
    return {"type": "object",
            "properties": {"pairs": {"type": "object", "properties": steps, "required": list(steps),
                                     "additionalProperties": False}},
            "required": ["pairs"], "additionalProperties": False}


def pairs_thoughts(reply: Any) -> list[str] | None:
    """The steps of a ``pair_steps`` reply, taken in turn from each pair (the first of every pair, then the
    second, ...), so keeping the first ``count`` keeps every pair; ``None`` for a reply that is not one."""
    pairs = reply.get("pairs") if isinstance(reply, dict) else None
    if not isinstance(pairs, dict):
        return None
    lists = [[s for s in steps if isinstance(s, str)] if isinstance(steps, list) else [] for steps in pairs.values()]
    depth = max((len(steps) for steps in lists), default=0)
    return [steps[i] for i in range(depth) for steps in lists if i < len(steps)]
