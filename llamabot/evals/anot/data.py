"""The philly_cafes data: restaurants with their reviews, requests with ground truth, candidate selection.

Files in a data directory (upstream format, see ``../shared/data/PROVENANCE.md``):

| file | what |
|---|---|
| ``restaurants.jsonl`` | one restaurant per line; ``attributes`` values are Python-literal strings (``"True"``, ``"u'free'"``, ``"{'hipster': True}"``) |
| ``reviews.jsonl`` | one review per line, joined to its restaurant by ``business_id`` (file order kept) |
| ``requests.jsonl`` | ``id``, ``group``, ``text``, ``shorthand``, ``structure`` |
| ``groundtruth.jsonl`` | ``request_id``, ``gold_idx`` (0-based line in ``restaurants.jsonl``) |
| ``user_mapping.json`` (optional) | ``review_assignments``: reviewer names and friends, per restaurant and review position |

Attribute strings are parsed with :func:`ast.literal_eval` (literals only, never ``eval``), length-capped;
a string that is not a literal stays a string. The items handed to a method keep only the fields a request
can be about (``ITEM_FIELDS``), plus the reviews.
"""

from __future__ import annotations

import ast
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llamabot.errors import LlamabotError
from llamabot.evals.dataset import read_jsonl

#: Restaurant fields kept in the items a method sees (ids, coordinates and upstream's LLM notes are dropped).
ITEM_FIELDS = ("name", "stars", "review_count", "categories", "attributes", "hours")
#: Review fields kept (the ids are dropped).
REVIEW_FIELDS = ("text", "stars", "date", "useful", "funny", "cool", "user", "user_name", "friends")
MAX_LITERAL_CHARS = 4000


class DataFormatError(LlamabotError, ValueError):
    """A data file is missing or malformed. Names the file and, where known, the line."""


def parse_attribute(value: Any) -> Any:
    """A Yelp attribute value: Python-literal strings become their value (``"u'free'"`` -> ``"free"``,
    ``"{'hipster': True}"`` -> a dict); anything else is returned unchanged. Never evaluates code."""
    if not isinstance(value, str) or len(value) > MAX_LITERAL_CHARS:
        return value
    try:
        return ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


@dataclass(frozen=True, slots=True)
class Request:
    """A benchmark request and its gold restaurant (``gold_idx``: 0-based index into the restaurants)."""

    id: str
    group: str
    text: str
    gold_idx: int
    shorthand: str = ""
    structure: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Dataset:
    """Restaurants (as items: attributes parsed, reviews attached) and requests with ground truth."""

    name: str
    items: tuple[dict[str, Any], ...]
    requests: tuple[Request, ...]

    def names(self, indices: Sequence[int]) -> list[str]:
        return [str(self.items[i].get("name", i)) for i in indices]


def _reviews_by_business(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for review in records:
        grouped.setdefault(str(review.get("business_id")), []).append(review)
    return grouped


def _assign_reviewers(reviews: list[dict[str, Any]], assignments: list[dict[str, Any]]) -> None:
    for assignment in assignments:
        position = assignment.get("review_idx")
        if isinstance(position, int) and 0 <= position < len(reviews):
            reviews[position]["user_name"] = assignment.get("name")
            reviews[position]["friends"] = list(assignment.get("friends") or [])


def restaurant_item(record: dict[str, Any], reviews: list[dict[str, Any]]) -> dict[str, Any]:
    """The item a method sees for one restaurant: ``ITEM_FIELDS`` with parsed attributes, and its reviews."""
    item = {key: record[key] for key in ITEM_FIELDS if key in record}
    attributes = record.get("attributes") or {}
    item["attributes"] = {key: parse_attribute(value) for key, value in attributes.items()}
    item["reviews"] = [{k: r[k] for k in REVIEW_FIELDS if k in r} for r in reviews]
    return item


def load_dataset(directory: str | Path) -> Dataset:
    """Load a philly_cafes-format directory (see the module docstring). Raises :class:`DataFormatError`."""
    root = Path(directory)
    restaurants = read_jsonl(root / "restaurants.jsonl", error=DataFormatError)
    reviews = _reviews_by_business(read_jsonl(root / "reviews.jsonl", error=DataFormatError))
    mapping_path = root / "user_mapping.json"
    assignments: dict[str, list[dict[str, Any]]] = {}
    if mapping_path.is_file():
        try:
            assignments = json.loads(mapping_path.read_text(encoding="utf-8")).get("review_assignments") or {}
        except (json.JSONDecodeError, AttributeError) as exc:
            raise DataFormatError(f"{mapping_path}: not a JSON object with review_assignments: {exc}") from exc
    items = []
    for index, record in enumerate(restaurants):
        own = [dict(r) for r in reviews.get(str(record.get("business_id")), [])]
        _assign_reviewers(own, assignments.get(str(index), []))
        items.append(restaurant_item(record, own))
    gold = {}
    for number, record in enumerate(read_jsonl(root / "groundtruth.jsonl", error=DataFormatError), start=1):
        index = record.get("gold_idx")
        if not isinstance(index, int) or not 0 <= index < len(items):
            raise DataFormatError(f"{root / 'groundtruth.jsonl'}, line {number}: gold_idx {index!r} is not 0..{len(items) - 1}")
        gold[record.get("request_id")] = index
    requests = []
    for number, record in enumerate(read_jsonl(root / "requests.jsonl", error=DataFormatError), start=1):
        request_id = record.get("id")
        if request_id not in gold:
            raise DataFormatError(f"{root / 'requests.jsonl'}, line {number}: request {request_id!r} has no ground truth")
        requests.append(
            Request(
                id=str(request_id),
                group=str(record.get("group", "")),
                text=str(record.get("text", "")),
                gold_idx=gold[request_id],
                shorthand=str(record.get("shorthand", "")),
                structure=record.get("structure") or {},
            )
        )
    return Dataset(root.name, tuple(items), tuple(requests))


def select_candidates(n_items: int, gold_idx: int, n_candidates: int, seed: int | str, request_id: str) -> list[int]:
    """The item indices (0-based) shown for one request: the gold item plus ``n_candidates - 1`` others drawn
    at random, in a shuffled order. Deterministic for a given ``seed`` and ``request_id``; all items (shuffled)
    when ``n_candidates`` is at least the number of items."""
    if n_candidates < 1:
        raise ValueError(f"n_candidates must be at least 1, got {n_candidates}")
    if not 0 <= gold_idx < n_items:
        raise ValueError(f"gold_idx {gold_idx} is not an item index 0..{n_items - 1}")
    rng = random.Random(f"{seed}:{request_id}")
    others = [i for i in range(n_items) if i != gold_idx]
    chosen = [gold_idx, *rng.sample(others, min(len(others), n_candidates - 1))]
    rng.shuffle(chosen)
    return chosen
