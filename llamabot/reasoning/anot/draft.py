"""A draft LWT compiled from a strategy: one step per condition plus a ``final`` step. Pure.

Phase 2 starts from this draft (unless ``draft=False``): the agent checks it with ``lwt_list``/``read``, fixes it
with ``lwt_set``/``lwt_insert`` and calls ``done()``. The draft also is the fallback script when the agent fails.

Each condition ``k`` becomes step ``ck``: a ``value`` condition a CHECK of the value at its path
(``{(items)}[*][attributes][GoodForKids] == True``; an expected value written ``<= 2`` or ``not False`` keeps its
operator), a ``keyword`` condition a CHECK that a text mentions the keyword (``{(items)}[*][reviews][~live music]
== True``: at least one review; ``[categories][~Gelato]``: the text itself); a ``model`` condition an LLM step that
lists the values for the model to judge, unless its expected value is ``True``/``False`` (the 1.5B model types
conditions loosely: ``WiFi`` as HOURS); so does a value no CHECK can compare with (``< cheap``). Paths the model
wrote loosely (``GoodForKids``, ``ambience.hipster``) are located in the items' actual fields by :func:`locate_path`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from llamabot.reasoning.anot.checks import CheckError, parse_check
from llamabot.reasoning.anot.lwt import CHECK, LWTStep
from llamabot.reasoning.anot.paths import MISSING, DataPathError, parse_path, walk
from llamabot.reasoning.anot.strategy import Condition, Strategy
from llamabot.reasoning.anot.vocabulary import Vocabulary, check_of

_UNSAFE = re.compile(r"[\[\]{}()'\"]")
_OPERATOR = re.compile(r"^(==|!=|<=|>=|=|<|>)\s*\S")


def _field_paths(value: Any, prefix: tuple[str, ...], out: dict[tuple[str, ...], None], depth: int) -> None:
    if depth > 4 or not isinstance(value, dict):
        return
    for key, child in value.items():
        path = (*prefix, str(key))
        out.setdefault(path, None)
        _field_paths(child, path, out, depth + 1)


def locate_path(items: Sequence[Any], segments: Sequence[str]) -> tuple[str, ...]:
    """``segments`` if some item has a value there; else the first field path of the items that ends with
    them (case-insensitive, shortest first, e.g. ``GoodForKids`` -> ``attributes.GoodForKids``); else as given."""
    segments = tuple(segments)
    if any(walk(item, segments) is not MISSING for item in items):
        return segments
    fields: dict[tuple[str, ...], None] = {}
    for item in items:
        _field_paths(item, (), fields, 0)
    wanted = tuple(s.lower() for s in segments)
    matches = [p for p in fields if len(p) >= len(wanted) and tuple(s.lower() for s in p[-len(wanted):]) == wanted]
    return min(matches, key=len) if matches else segments


def _is_text(item: Any, segments: tuple[str, ...]) -> bool:
    try:
        return isinstance(walk(item, segments), str)
    except DataPathError:  # e.g. a key into a list
        return False


def _text_list_path(items: Sequence[Any], segments: tuple[str, ...]) -> tuple[str, ...]:
    """For a keyword condition: the path itself when it leads to a text (``categories``); else the path cut at the
    first list (``reviews.text`` -> ``reviews``); else the first top-level list of texts in the items."""
    if segments and any(_is_text(item, segments) for item in items):
        return segments
    for end in range(1, len(segments) + 1):
        if any(isinstance(walk(item, segments[:end]), list) for item in items):
            return segments[:end]
    for item in items:
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, list) and value and isinstance(value[0], (dict, str)):
                    return (str(key),)
    return segments


def _brackets(segments: Sequence[str]) -> str:
    return "".join(f"[{s}]" for s in segments)


def _clean(text: str) -> str:
    return " ".join(_UNSAFE.sub(" ", text).split())


def _comparison(expected: str) -> str:
    """``op value`` for an expected value: ``== True``; ``<= 2`` and ``not False`` (``!= False``) keep theirs."""
    if _OPERATOR.match(expected):
        return expected
    if expected.lower().startswith("not "):
        return f"!= {expected[4:].strip()}"
    return f"== {expected}"


def _check_step(step_id: str, expression: str, truth_only: bool = False) -> LWTStep | None:
    """A CHECK step of ``expression``, or ``None`` when no CHECK can compare it (e.g. ``< cheap``) or, with
    ``truth_only``, when it does not compare with True/False."""
    try:
        check = parse_check(expression)
    except CheckError:
        return None
    if truth_only and not isinstance(check.expected, bool):
        return None
    return LWTStep(step_id, expression, kind=CHECK)


def condition_step(condition: Condition, items: Sequence[Any], vocabulary: Vocabulary) -> LWTStep:
    """The draft step ``c<id>`` checking one condition over every item."""
    try:
        segments = parse_path(condition.path)
    except DataPathError:
        segments = tuple(s for s in re.split(r"[.\[\]\s]+", _clean(condition.path)) if s and not s.startswith("__"))
    expected = _clean(condition.expected)
    step_id = f"c{condition.id}"
    how = check_of(vocabulary, condition.type)
    if how == "keyword":
        where = _text_list_path(items, segments)
        check = _check_step(step_id, f"{{(items)}}[*]{_brackets(where)}[~{expected}] == True")
        if check is not None:
            return check
        prompt = (
            f"{where[-1] if where else 'texts'} mentioning {expected}: {{(items)}}[*]{_brackets(where)}[~{expected}]. "
            "Which have at least 1? Output: [indices]"
        )
    else:
        where = locate_path(items, segments)
        check = _check_step(step_id, f"{{(items)}}[*]{_brackets(where)} {_comparison(expected)}", how != "value")
        if check is not None:
            return check
        prompt = (
            f"{where[-1] if where else condition.path}: {{(items)}}[*]{_brackets(where)}. Which are {expected}? "
            "(missing = no) Output: [indices]"
        )
    return LWTStep(step_id, prompt)


def final_prompt(strategy: Strategy, n_items: int, vocabulary: Vocabulary = ()) -> str:
    parts = ", ".join(f"c{c.id}={{(c{c.id})}}" for c in strategy.conditions)
    return (
        f"{parts}. ck lists the items meeting condition k. Logic: {strategy.logic}. Rank the {n_items} items: "
        "those satisfying the logic first, then by conditions met. Output top-5: [best, 2nd, 3rd, 4th, 5th]"
    )


def draft_lwt(strategy: Strategy, items: Sequence[Any], vocabulary: Vocabulary = ()) -> list[LWTStep]:
    """The draft script for ``strategy`` over ``items``: ``c1..cN`` and ``final``."""
    steps = [condition_step(c, items, vocabulary) for c in strategy.conditions]
    steps.append(LWTStep("final", final_prompt(strategy, len(items), vocabulary)))
    return steps


def fallback_lwt(n_items: int) -> list[LWTStep]:
    """The last-resort script (no strategy, no valid script): rank from the request and the items directly."""
    return [
        LWTStep(
            "final",
            "Request: {(query)}\nItems:\n{(items)}\n"
            f"Which of the {n_items} items best match the request? Output the top-5 item numbers, best first: [a, b, c, d, e]",
        )
    ]
