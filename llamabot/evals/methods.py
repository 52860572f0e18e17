"""Several methods compared on the same items in one :func:`~llamabot.evals.run.evaluate` run: one case per item
and method (item by item, the methods in the order given), id ``"<method>:<item id>"``, and a bot that hands each
case's item to its method's runner. The AoT and ToT harnesses are built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from llamabot.evals.dataset import Case, Dataset


def case_id(method: str, item: str) -> str:
    """The id of ``method``'s case for the item ``item``."""
    return f"{method}:{item}"


def split_case_id(case: str) -> tuple[str, str]:
    """``(method, item id)`` of a case id made by :func:`case_id`."""
    method, _, item = case.partition(":")
    return method, item


def method_cases(items: Iterable[Case], methods: Sequence[str], name: str = "dataset") -> Dataset:
    """One case per item and method, item by item: the item's input under ``"input"`` and the method under
    ``"method"`` (the keyword arguments of :class:`MethodBot`), its expected value and metadata."""
    return Dataset([Case(case_id(method, item.id), {"method": method, "input": item.input}, item.expected,
                         item.metadata) for item in items for method in methods], name)


class MethodBot:
    """The bot of :func:`method_cases`: calls the runner of the case's method with the item's input (a plain
    function, run in a thread by :func:`~llamabot.evals.run.evaluate`)."""

    def __init__(self, runners: Mapping[str, Callable[[Any], Any]]) -> None:
        self.runners = dict(runners)

    def __call__(self, method: str, input: Any) -> Any:  # noqa: A002 - the case's field
        return self.runners[method](input)
