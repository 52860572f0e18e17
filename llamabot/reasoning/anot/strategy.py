"""Phase 1's output: a STRATEGY (typed conditions, AND/OR logic, item count) plus a message for phase 2.

The model answers with JSON validated by :func:`strategy_model` (a pydantic model whose condition ``type`` is
an enum of the vocabulary in use, so the embedded model's grammar can only write known types). Invalid output
(unknown condition ids in LOGIC, a LOGIC that does not parse, repeated ids...) is sent back to the model by
``StructuredBot``'s bounded repair loop. :func:`render_strategy` gives the seed's text form::

    ===STRATEGY===
    CONDITIONS:
      1. [ATTR] attributes.GoodForKids = True
    LOGIC: AND(1)
    TOTAL_ITEMS: 10

    ===MESSAGE===
    Notes for phase 2
"""

from __future__ import annotations

import copyreg
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, model_validator

from llamabot.reasoning.anot.logic import Logic, Term, parse_logic
from llamabot.reasoning.anot.vocabulary import Vocabulary, check_of, vocabulary_names

MAX_CONDITIONS = 8


class Condition(BaseModel):
    """One condition of the request. ``request_words`` (the words of the request that state it) come before the
    path, value and type, so a small model anchors each condition in the request instead of copying examples."""

    id: int = Field(ge=1, le=MAX_CONDITIONS, description="1, 2, 3, ... in order")
    request_words: str = Field(max_length=80, description="the words of the request that state this condition")
    path: str = Field(max_length=120, description="dotted path of the field in an item, e.g. attributes.GoodForKids")
    expected: str = Field(max_length=80, description="the value that satisfies it, or the keyword to look for")
    type: str = Field(description="the condition type, from the vocabulary")

    def __reduce__(self) -> Any:
        return _reduce(self)


class Strategy(BaseModel):
    """The evaluation strategy: conditions, how they combine, how many items, a note for phase 2."""

    conditions: list[Condition] = Field(min_length=1, max_length=MAX_CONDITIONS)
    logic: str = Field(max_length=200, description="AND/OR over condition ids, nestable, e.g. AND(1, 2, OR(3, 4))")
    total_items: int = Field(ge=0)
    message: str = Field(max_length=300, description="a short note for phase 2")

    @model_validator(mode="after")
    def _logic_names_known_conditions(self) -> Strategy:
        ids = [c.id for c in self.conditions]
        if len(set(ids)) != len(ids):
            raise ValueError(f"condition ids repeat: {ids}; number the conditions 1, 2, 3, ...")
        tree = parse_logic(self.logic)  # LogicSyntaxError is a ValueError: pydantic reports it
        unknown = sorted(tree.condition_ids() - set(ids))
        if unknown:
            raise ValueError(f"LOGIC {self.logic!r} uses condition ids {unknown}, but the conditions are {ids}")
        self.logic = tree.render()
        return self

    @property
    def logic_tree(self) -> Logic:
        return parse_logic(self.logic)

    def __reduce__(self) -> Any:
        return _reduce(self)


def strategy_model(vocabulary: Vocabulary) -> type[Strategy]:
    """A :class:`Strategy` model whose condition ``type`` must be one of ``vocabulary``'s names (one class per
    vocabulary: bots of the same vocabulary share it, and its instances pickle and compare equal across them)."""
    return _strategy_model(vocabulary_names(vocabulary))


@cache  # unbounded: a class evicted and made again would not equal its instances; vocabularies are few
def _strategy_model(names: tuple[str, ...]) -> type[Strategy]:
    condition = create_model(
        "Condition",
        __base__=Condition,
        type=(Literal[names], Field(description="the condition type")),  # type: ignore[valid-type]
    )
    model = create_model(
        "Strategy",
        __base__=Strategy,
        conditions=(list[condition], Field(min_length=1, max_length=MAX_CONDITIONS)),  # type: ignore[valid-type]
    )
    model.__vocabulary__ = condition.__vocabulary__ = names  # what pickles its instances (see _reduce)
    return model


def condition_model(model: type[Strategy]) -> type[Condition]:
    """The condition class of a strategy model made by :func:`strategy_model` (``Condition`` for ``Strategy``)."""
    annotation = model.model_fields["conditions"].annotation
    return annotation.__args__[0]  # list[Condition subclass]


def _reduce(value: Condition | Strategy) -> Any:
    """Pickle an instance of a vocabulary's model (made at run time, so pickle cannot find it by name: a durable
    run's result holds one) as its vocabulary names and pydantic's own state; any other class (the base classes, a
    user's importable subclass) pickles as usual, by name."""
    cls = type(value)
    names = cls.__dict__.get("__vocabulary__")
    if names is None:  # what pickle does for any pydantic model: the class by name, then __setstate__
        return copyreg.__newobj__, (cls,), value.__getstate__()
    return _restore, (issubclass(cls, Strategy), names, value.__getstate__())


def _restore(is_strategy: bool, names: tuple[str, ...], state: dict[str, Any]) -> Condition | Strategy:
    model = _strategy_model(names)
    cls = model if is_strategy else condition_model(model)
    value = cls.__new__(cls)
    value.__setstate__(state)
    return value


def _remap(node: Logic, mapping: dict[int, int]) -> Logic:
    args: dict[Term, None] = {}
    for arg in node.args:
        args.setdefault(mapping.get(arg, arg) if isinstance(arg, int) else _remap(arg, mapping), None)
    return Logic(node.op, tuple(args))


def merge_duplicate_conditions(strategy: Strategy) -> tuple[Strategy, dict[int, int]]:
    """Merge conditions that check the same thing (same type, path and expected value, ignoring case): the first
    keeps its id, LOGIC is rewritten to it (``AND(1, 3)`` with 3 = 1 becomes ``AND(1)``). Small models often
    repeat a condition; each copy would cost a phase 3 call and weigh twice in the scores. Returns the strategy
    (unchanged when nothing repeats) and ``{dropped id: kept id}``."""
    first: dict[tuple[str, str, str], int] = {}
    mapping: dict[int, int] = {}
    kept = []
    for condition in strategy.conditions:
        key = (condition.type, condition.path.strip().lower(), condition.expected.strip().lower())
        if key in first:
            mapping[condition.id] = first[key]
        else:
            first[key] = condition.id
            kept.append(condition)
    if not mapping:
        return strategy, mapping
    logic = _remap(strategy.logic_tree, mapping).render()
    return strategy.model_copy(update={"conditions": kept, "logic": logic}), mapping


def condition_text(condition: Condition, vocabulary: Vocabulary = ()) -> str:
    """``attributes.GoodForKids = True``, or ``reviews ~ "live music"`` for keyword conditions."""
    if check_of(vocabulary, condition.type) == "keyword":
        return f'{condition.path} ~ "{condition.expected}"'
    return f"{condition.path} = {condition.expected}"


def brief_conditions(strategy: Strategy, vocabulary: Vocabulary = ()) -> str:
    """The strategy as phase 2's prompt shows it: each condition with the request's words, then the logic::

        1. "bringing my dog" -> attributes.DogsAllowed = True
        Logic: AND(1)
    """
    lines = [
        f'{c.id}. "{c.request_words}" -> {condition_text(c, vocabulary)}' if c.request_words.strip()
        else f"{c.id}. {condition_text(c, vocabulary)}"
        for c in strategy.conditions
    ]
    return "\n".join([*lines, f"Logic: {strategy.logic}"])


def render_strategy(strategy: Strategy, vocabulary: Vocabulary = ()) -> str:
    """The seed's ``===STRATEGY=== / ===MESSAGE===`` text form (for display, logs and the phase 2 prompt)."""
    lines = ["===STRATEGY===", "CONDITIONS:"]
    for condition in strategy.conditions:
        lines.append(f"  {condition.id}. [{condition.type}] {condition_text(condition, vocabulary)}")
    lines += ["", f"LOGIC: {strategy.logic}", f"TOTAL_ITEMS: {strategy.total_items}", "", "===MESSAGE===",
              strategy.message.strip() or "(none)"]
    return "\n".join(lines)
