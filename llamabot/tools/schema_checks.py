"""What a JSON schema written elsewhere (an MCP server's ``inputSchema``) must pass before its tool is used, and
the bounded regular expressions its arguments are checked with.

- Every ``$ref`` must resolve inside the schema (:func:`unresolvable_refs`, at load time): ``jsonschema`` would
  otherwise fail in the middle of a run with an untyped ``_WrappedReferencingError``. Nothing is fetched: a ref to
  another document is unresolvable.
- ``pattern``, ``patternProperties`` (and ``additionalProperties`` beside them) are matched with the ``regex``
  package under a time budget shared by one check of the arguments (:func:`pattern_budget`), instead of ``re``,
  which can backtrack for minutes on a crafted pattern, holding the GIL. A value whose match runs past the
  budget is an argument error. ``unevaluatedProperties`` would match ``patternProperties`` with ``re``, so a schema
  with both is refused.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from collections.abc import Iterator
from typing import Any

import referencing
import referencing.exceptions
import referencing.jsonschema
import regex
from jsonschema import ValidationError
from jsonschema.validators import extend

from llamabot.errors import excerpt

#: Seconds the pattern matches of one check of a tool's arguments may take together.
PATTERN_SECONDS = 0.25
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("llamabot_pattern_deadline", default=None)
#: Keys whose values are data, not subschemas: a ``$ref`` or ``pattern`` there is not one.
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})


class PatternTimeout(Exception):
    """A pattern match ran past the budget."""


@contextlib.contextmanager
def pattern_budget(seconds: float = PATTERN_SECONDS) -> Iterator[None]:
    """Within the block, every pattern match draws on one budget of ``seconds``."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    return regex.compile(pattern)


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``; :class:`PatternTimeout` when the budget runs out."""
    deadline = _DEADLINE.get()
    remaining = PATTERN_SECONDS if deadline is None else deadline - time.monotonic()
    if remaining <= 0:
        raise PatternTimeout
    try:
        return _compiled(pattern).search(text, timeout=remaining) is not None
    except TimeoutError:
        raise PatternTimeout from None


def _too_slow(pattern: str, text: str) -> ValidationError:
    return ValidationError(
        f"matching {excerpt(text, 60)} against the pattern {excerpt(pattern, 60)} took more than "
        f"{PATTERN_SECONDS} s; send a shorter or simpler value"
    )


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        if not search(pattern, instance):
            yield ValidationError(f"{excerpt(instance, 100)} does not match {excerpt(pattern, 100)}")
    except PatternTimeout:
        yield _too_slow(pattern, instance)


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            try:
                if search(pattern, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)
            except PatternTimeout:
                yield _too_slow(pattern, key)


def _additional_properties(original: Any) -> Any:
    def check(validator: Any, additional: Any, instance: Any, schema: dict[str, Any]) -> Any:
        if "patternProperties" not in schema or not validator.is_type(instance, "object"):
            yield from original(validator, additional, instance, schema)  # no pattern involved
            return
        properties, patterns = schema.get("properties", {}), list(schema["patternProperties"])
        extras = []
        for key in instance:
            try:
                if key not in properties and not any(search(p, key) for p in patterns):
                    extras.append(key)
            except PatternTimeout:
                yield _too_slow("|".join(patterns), key)
        if validator.is_type(additional, "object"):
            for key in extras:
                yield from validator.descend(instance[key], additional, path=key)
        elif not additional and extras:
            yield ValidationError(
                f"{', '.join(excerpt(k, 60) for k in sorted(extras)[:5])} "
                f"{'does' if len(extras) == 1 else 'do'} not match any of the regexes: "
                f"{', '.join(excerpt(p, 60) for p in sorted(patterns))}"
            )

    return check


@functools.cache
def bounded(validator_class: Any) -> Any:
    """``validator_class`` with its pattern keywords matched by :func:`search`."""
    return extend(validator_class, {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties(validator_class.VALIDATORS["additionalProperties"]),
    })


def schema_problems(schema: dict[str, Any], validator_class: Any) -> list[str]:
    """What makes ``schema`` unusable here: a ``$ref`` that does not resolve within it, a pattern the ``regex``
    package cannot compile, ``patternProperties`` beside ``unevaluatedProperties``. Each as ``"at PATH: ..."``."""
    specification = referencing.jsonschema.specification_with(
        validator_class.META_SCHEMA.get("$schema", ""), default=referencing.jsonschema.DRAFT202012
    )
    registry: referencing.Registry[Any] = referencing.Registry()
    stack: list[tuple[tuple[str, ...], Any, Any]] = [((), schema, registry.resolver_with_root(
        specification.create_resource(schema)))]
    problems, keys = [], set()
    while stack:  # every object that may be a subschema (data under enum, const... skipped), with its resolver
        path, node, resolver = stack.pop()
        if isinstance(node, list):
            stack.extend((path + (str(i),), v, resolver) for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        if "$id" in node:
            resolver = resolver.in_subresource(specification.create_resource(node))
        stack.extend((path + (str(k),), v, resolver) for k, v in node.items() if k not in _DATA_KEYS)
        where = "/".join(path) or "(top level)"
        keys.update(node)
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except referencing.exceptions.Unresolvable as exc:
                problems.append(f"at {where}: $ref {excerpt(ref, 80)} does not resolve within the schema "
                                f"({type(exc).__name__})")
        for pattern in (node.get("pattern"), *(node.get("patternProperties") or ())):
            if isinstance(pattern, str):
                try:
                    _compiled(pattern)
                except regex.error as exc:
                    problems.append(f"at {where}: pattern {excerpt(pattern, 80)} cannot be compiled ({exc})")
    if {"patternProperties", "unevaluatedProperties"} <= keys:
        problems.append("patternProperties beside unevaluatedProperties cannot be checked within a time bound")
    return sorted(problems)
