"""Scorers of the general evaluation API: ``scorer(output, case) -> bool | float`` (1.0 right, 0.0 wrong).

``output`` is the bot's answer as text (:func:`llamabot.evals.run.answer_text`); ``case`` the :class:`Case`
(``case.expected``, ``case.input``, ``case.metadata``). A scorer that raises scores the case 0 and the error is
recorded. The built-in ones, by name (``--scorer``):

| name | right when |
|---|---|
| ``exact`` | the output, stripped, equals the expected text |
| ``contains`` | the expected text is in the output (case-insensitive) |
| ``number`` | the number the output states (:func:`parse_number`) equals the expected number (:func:`is_correct`) |
| ``game24`` | the output's expression makes 24 from the case's puzzle (:func:`~llamabot.evals.game24.check_game24`) |

Anything else is a ``module:function`` spec (:func:`resolve_scorer`).
"""

from __future__ import annotations

import pkgutil
import re
from collections.abc import Callable
from typing import Any

from llamabot.evals.dataset import Case, DatasetError
from llamabot.evals.game24.check import check_game24
from llamabot.evals.game24.steps import extract_answer

Scorer = Callable[[str, Case], "bool | float"]

# No two quantifiers competing for the same blanks (the old ``\s*(?:is|:)?\s*:?\s*`` was cubic: 9 s on
# "answer" and 1,000 blanks; issue #13).
_BOXED = re.compile(r"\\boxed\{([^}]*)\}")
_ANSWER_LINE = re.compile(r"answer(?:\s*is)?[\s:]*\$?(-?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE]-?\d+)?")


def parse_number(text: Any) -> float | None:
    """The number an answer states: the value itself when numeric; else, in text, a ``\\boxed{...}`` value,
    then the number after the last "Answer:", then the last number."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text)
    text = str(text or "")
    marked = _BOXED.findall(text) or _ANSWER_LINE.findall(text)
    found = _NUMBER.findall(marked[-1]) if marked else []
    found = found or _NUMBER.findall(text)
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


def rounded_places(answer: str) -> int | None:
    """How many decimals a gold answer written as text was rounded to: two or more decimals (``"-3.93"``) are
    taken as rounded; fewer (``"28"``, ``"87.5"``, ``"47.0"``) as exact (``None``)."""
    decimals = answer.strip().partition(".")[2]
    return len(decimals) if len(decimals) >= 2 and decimals.isdigit() else None


def is_correct(predicted: float | None, gold: float, tolerance: float = 1e-4, places: int | None = None) -> bool:
    """Equal within ``tolerance`` relative to the gold answer (absolute below 1); with ``places`` (the gold is
    rounded to that many decimals), also right when it rounds to the gold (within half a unit of its last place)."""
    if predicted is None:
        return False
    if abs(predicted - gold) <= tolerance * max(1.0, abs(gold)):
        return True
    return places is not None and abs(predicted - gold) <= 0.5 * 10.0**-places + 1e-9


def exact(output: str, case: Case) -> bool:
    return output.strip() == str(case.expected).strip()


def contains(output: str, case: Case) -> bool:
    return str(case.expected).strip().casefold() in output.casefold()


def number(output: str, case: Case) -> bool:
    expected = case.expected
    places = rounded_places(expected) if isinstance(expected, str) else None
    return is_correct(parse_number(output), float(expected), places=places)


def game24(output: str, case: Case) -> bool:
    puzzle = str(case.input)
    return check_game24(puzzle, extract_answer(output, puzzle) or output)


SCORERS: dict[str, Scorer] = {"exact": exact, "contains": contains, "number": number, "game24": game24}


def resolve_scorer(scorer: str | Scorer) -> Scorer:
    """A scorer from its name (:data:`SCORERS`), a ``module:function`` spec, or the function itself. Raises
    :class:`~llamabot.evals.dataset.DatasetError` (a ``ValueError``) naming the spec when it cannot be loaded."""
    if callable(scorer):
        return scorer
    if scorer in SCORERS:
        return SCORERS[scorer]
    found = load_spec(scorer, "scorer")
    if not callable(found):
        raise DatasetError(f"the scorer {scorer!r} is not a function")
    return found


def load_spec(spec: str, what: str) -> Any:
    """What ``module:attribute`` names (``pkgutil.resolve_name``); a ``DatasetError`` naming ``what`` else."""
    module, colon, attribute = spec.partition(":")
    if not (module and colon and attribute):
        raise DatasetError(f"the {what} {spec!r}: use a name ({', '.join(SCORERS)}) or module:attribute"
                           if what == "scorer" else f"the {what} {spec!r}: use module:attribute")
    try:
        return pkgutil.resolve_name(spec)
    except (ImportError, AttributeError, ValueError) as exc:
        raise DatasetError(f"cannot load the {what} {spec!r}: {exc}") from exc
