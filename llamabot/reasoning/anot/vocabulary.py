"""Condition types: the vocabulary phase 1 classifies a request's conditions with. Not hard-coded to Yelp.

A :class:`ConditionType` has a name (``ATTR``), a description the phase 1 prompt shows, and how its condition
is checked: ``value`` (compare the value at the condition's path with the expected value) or ``keyword``
(count the texts at the path that mention the expected keyword), both by a CHECK step the program evaluates,
or ``model`` (an LLM step asks the model, for values no comparison decides, such as opening hours). ``YELP_VOCABULARY`` is the seed's set for the
philly_cafes data; pass your own tuple to :class:`ANoTBot` for other items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Check = Literal["value", "keyword", "model"]


@dataclass(frozen=True, slots=True)
class ConditionType:
    """One type of condition, e.g. ``ConditionType("ATTR", "Direct attribute lookup ...", "value")``."""

    name: str
    description: str
    check: Check = "value"

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").isalnum() or not self.name.isupper():
            raise ValueError(f"condition type name {self.name!r}: use UPPER_CASE letters, digits and '_'")


Vocabulary = Sequence[ConditionType]

YELP_VOCABULARY: tuple[ConditionType, ...] = (
    ConditionType("ATTR", "attribute: path attributes.<Name>, expected its value (True, False, a word, a number)"),
    ConditionType("AMBIENCE", "atmosphere: path attributes.Ambience.<key>, expected True or False"),
    ConditionType("MEAL", "meal it suits: path attributes.GoodForMeal.<key>, expected True or False"),
    ConditionType("HOURS", "opening hours: path hours.<Day>, expected the time it must be open", "model"),
    ConditionType("REVIEW_TEXT", "reviews should mention it: path reviews, expected one keyword", "keyword"),
)


def vocabulary_names(vocabulary: Vocabulary) -> tuple[str, ...]:
    names = tuple(t.name for t in vocabulary)
    if not names:
        raise ValueError("the condition vocabulary is empty; give at least one ConditionType")
    if len(set(names)) != len(names):
        raise ValueError(f"condition type names repeat: {names}")
    return names


def describe_vocabulary(vocabulary: Vocabulary) -> str:
    """The vocabulary as prompt lines: ``- [ATTR] direct attribute lookup, ...``."""
    return "\n".join(f"- [{t.name}] {t.description}" for t in vocabulary)


def check_of(vocabulary: Vocabulary, name: str) -> Check:
    for condition_type in vocabulary:
        if condition_type.name == name:
            return condition_type.check
    return "value"
