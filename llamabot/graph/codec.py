"""Run state as JSON that restores exactly, for durable runs. Pure: no I/O, stdlib and pydantic only.

``decode_state(json.loads(json.dumps(encode_state(state)))) == state``, types included: a tuple stays a
tuple, a deque a deque, an ``int`` dict key an ``int``, a dataclass or pydantic model the same class with
equal fields.
:func:`dumps_state` / :func:`loads_state` do the same to and from text.

Plain JSON values stay plain, so a saved state reads as ordinary JSON; anything else is a JSON object with the
tag key ``"__llamabot__"`` naming its kind::

    {"__llamabot__": "tuple", "items": [...]}
    {"__llamabot__": "deque", "items": [...], "maxlen": null}
    {"__llamabot__": "set" | "frozenset", "items": [...]}          (items in a stable order)
    {"__llamabot__": "dict", "items": [[key, value], ...]}          (a key not a str, or the tag key itself)
    {"__llamabot__": "float", "value": "nan" | "inf" | "-inf"}
    {"__llamabot__": "fraction", "value": "3/4"}
    {"__llamabot__": "enum", "class": "module:Qualname", "name": "MEMBER"}    ("value" for a Flag combination)
    {"__llamabot__": "dataclass", "class": "module:Qualname", "fields": {...}, "attrs": {...}}
    {"__llamabot__": "model", "class": "module:Qualname", "fields": {...}, "unset": [...], "extra": {...},
     "private": {...}}

``attrs`` (a non-slots dataclass's attributes that are not fields), ``unset`` (fields and extras not
in ``model_fields_set``), ``extra`` and ``private`` appear only when there is something to say.

Classes are named ``module:qualname`` and restored only when they are dataclasses, pydantic models or Enums,
and either live in one of llamabot's state modules (checked by name before anything is imported: see
:mod:`llamabot.graph.state_classes`) or are passed by the caller in ``allowed=``. Nothing is ever evaluated: a
state naming ``os:system`` or ``llamabot.durable.runtime:X`` is refused with :class:`StateCodecError`. Encoding applies the same rule, so a state that
saves can be restored, and refuses anything that is not data (functions, files, locks, clients, tasks) with
the path inside the state where it was found, e.g. ``state['plan'].atoms[3]``.

Malformed saved state (not JSON, nested deeper than :data:`MAX_DEPTH`, a number or fraction past Python's digit
limit, a deque ``maxlen`` too large or smaller than its items, missing or mistyped keys) raises
:class:`StateCodecError` naming the place, never a bare ``RecursionError``, ``OverflowError`` or ``KeyError``.

Restoring: a dataclass is built by calling the class with its ``init`` fields (``__post_init__`` runs), then
its other fields and attributes are set (``object.__setattr__``, so frozen classes work too); a pydantic model
with ``model_construct`` (defaults for fields added since; validators are not rerun). Two references to one
object are saved, and restored, as two equal objects; a cycle is refused.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from collections import deque
from collections.abc import Iterable
from enum import Enum
from fractions import Fraction
from typing import Any

from pydantic import BaseModel

from llamabot.errors import LlamabotError
from llamabot.errors import excerpt as _excerpt
from llamabot.graph.state_classes import class_name as _class_name
from llamabot.graph.state_classes import find_state_class
from llamabot.graph.state_classes import kind_of as _kind_of

__all__ = ["MAX_DEPTH", "TAG", "StateCodecError", "decode_state", "dumps_state", "encode_state", "loads_state"]

#: The key that marks a tagged JSON object.
TAG = "__llamabot__"

#: How deeply containers may nest in a state (each level costs the codec a few stack frames).
MAX_DEPTH = 100

_DUNDER = re.compile(r"__.*__")
_FRACTION = re.compile(r"-?\d+(?:/\d+)?")
_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_DATA = (
    "str, int, float, bool, None, list, tuple, dict, set, frozenset, deque, Fraction, Enum members, "
    "dataclasses and pydantic models"
)

#: A place inside the state, kept lazily as ``(parent, kind, key)`` links and rendered only for an error.
_Path = tuple[Any, str, Any] | None


class StateCodecError(LlamabotError, ValueError):
    """A value that cannot be saved, or saved state that cannot (or may not) be restored.

    ``path`` says where inside the state (``state['plan'].atoms[3]``), ``reason`` what was wrong there.
    """

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


def encode_state(value: Any, *, allowed: Iterable[type] = ()) -> Any:
    """``value`` as JSON-compatible data (dicts, lists, str, int, float, bool, None) that :func:`decode_state`
    turns back into an equal value of the same types. ``allowed``: classes outside ``llamabot`` that may be
    saved. Raises :class:`StateCodecError` naming the path and type of the first value that is not data."""
    return _Codec(allowed).encode(value, None)


def decode_state(obj: Any, *, allowed: Iterable[type] = ()) -> Any:
    """The value :func:`encode_state` encoded as ``obj``. Classes are restored only from ``llamabot`` and
    ``allowed``; anything else (or malformed data) raises :class:`StateCodecError` naming the path."""
    return _Codec(allowed).decode(obj, None)


def dumps_state(value: Any, *, allowed: Iterable[type] = (), indent: int | None = None) -> str:
    """:func:`encode_state` as strict JSON text (no ``NaN`` literals; dict order kept)."""
    return json.dumps(encode_state(value, allowed=allowed), allow_nan=False, indent=indent)


def loads_state(text: str | bytes, *, allowed: Iterable[type] = ()) -> Any:
    """The value saved by :func:`dumps_state`."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise StateCodecError("state", f"saved state is JSON text, not a {_type_name(text)}")
    try:
        obj = json.loads(text)
    except ValueError as exc:  # malformed, or an integer past Python's digit limit
        raise StateCodecError("state", f"not JSON text: {exc}") from exc
    except RecursionError as exc:
        raise StateCodecError("state", "the JSON text nests too deeply to read") from exc
    return decode_state(obj, allowed=allowed)


# -- paths and classes ---------------------------------------------------------------------------------------


def _render(path: _Path) -> str:
    parts = []
    while path is not None:
        path, kind, key = path
        parts.append(f"[{key!r}]" if kind == "[]" else f".{key}" if kind == "." else f"<{key}>")
    return "state" + "".join(reversed(parts))


def _type_name(value: Any) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


class _Codec:
    """One encode or decode call: the classes it may name, the classes already resolved, the containers on
    the current path (to refuse cycles)."""

    def __init__(self, allowed: Iterable[type]):
        self.allowed: dict[str, type] = {}
        for cls in allowed:
            if not isinstance(cls, type) or _kind_of(cls) is None:
                raise TypeError(f"allowed= takes dataclasses, pydantic models and Enum classes, not {cls!r}")
            self.allowed[_class_name(cls)] = cls
        self.resolved: dict[str, type] = {}
        self.open: set[int] = set()
        self.depth = 0  # decoding: the containers on the current path

    def fail(self, path: _Path, reason: str) -> StateCodecError:
        return StateCodecError(_render(path), reason)

    def resolve(self, name: Any, kind: str, path: _Path) -> type:
        """The class ``name`` names, if it may be restored as a ``kind``: one passed in ``allowed=``, or one of
        llamabot's state modules (see :func:`find_state_class`: imports nothing else)."""
        cls = (self.resolved.get(name) or self.allowed.get(name)) if isinstance(name, str) else None
        if cls is None:
            found = find_state_class(name)
            if isinstance(found, str):
                raise self.fail(path, found)
            cls = self.resolved[name] = found
        if _kind_of(cls) != kind:
            raise self.fail(path, f"{name} is not a {'pydantic model' if kind == 'model' else kind} class")
        return cls

    def name(self, cls: type, kind: str, path: _Path) -> str:
        """The name that finds ``cls`` again when decoding (the same rule), or an error saying why not."""
        name = _class_name(cls)
        if "<locals>" in name and name not in self.allowed:
            raise self.fail(path, f"class {name} is made in a function; pass it in allowed= to save it")
        if self.resolve(name, kind, path) is not cls:
            raise self.fail(
                path,
                f"{name} finds another class than the {kind} in the state (a class made at run time, e.g. by "
                "pydantic.create_model?); pass the class in allowed= to save and restore it",
            )
        return name

    # -- encoding --------------------------------------------------------------------------------------------

    def encode(self, value: Any, path: _Path) -> Any:
        cls = type(value)
        if cls is str or cls is int or cls is bool or value is None:
            return value
        if cls is float:
            return value if math.isfinite(value) else {TAG: "float", "value": repr(value)}
        if cls is Fraction:
            return {TAG: "fraction", "value": str(value)}
        if isinstance(value, Enum):
            return self.encode_enum(value, path)
        if id(value) in self.open:
            raise self.fail(path, f"the {_type_name(value)} contains itself; a cycle cannot be saved")
        if len(self.open) >= MAX_DEPTH:  # the containers on the path: a state deeper than this cannot be restored
            raise self.fail(path, f"containers nest deeper than {MAX_DEPTH} levels; a state this deep cannot be saved")
        self.open.add(id(value))
        try:
            return self.encode_container(value, cls, path)
        finally:
            self.open.discard(id(value))

    def encode_enum(self, member: Enum, path: _Path) -> dict[str, Any]:
        cls = type(member)
        data = {TAG: "enum", "class": self.name(cls, "enum", path)}
        if member.name is not None and cls.__members__.get(member.name) is member:
            data["name"] = member.name
        else:  # a Flag combination has no single member name
            data["value"] = self.encode(member.value, (path, ".", "value"))
        return data

    def encode_container(self, value: Any, cls: type, path: _Path) -> Any:
        if cls is list:
            return self.encode_items(value, path)
        if cls is dict:
            return self.encode_dict(value, path)
        if cls is tuple:
            return {TAG: "tuple", "items": self.encode_items(value, path)}
        if cls is deque:
            return {TAG: "deque", "items": self.encode_items(value, path), "maxlen": value.maxlen}
        if cls is set or cls is frozenset:
            items = [self.encode(item, (path, "<>", f"item {i}")) for i, item in enumerate(value)]
            items.sort(key=lambda item: json.dumps(item, sort_keys=True))  # the same text for the same set
            return {TAG: cls.__name__, "items": items}
        if dataclasses.is_dataclass(cls):
            return self.encode_dataclass(value, cls, path)
        if isinstance(value, BaseModel):
            return self.encode_model(value, cls, path)
        raise self.fail(
            path,
            f"cannot save a {_type_name(value)} in run state: only data ({_DATA}) can be saved; keep live "
            "objects (functions, files, locks, clients, tasks) out of the state",
        )

    def encode_items(self, items: Iterable[Any], path: _Path) -> list[Any]:
        return [self.encode(item, (path, "[]", i)) for i, item in enumerate(items)]

    def encode_dict(self, value: dict[Any, Any], path: _Path) -> dict[str, Any]:
        if TAG not in value and all(type(key) is str for key in value):
            return {key: self.encode(item, (path, "[]", key)) for key, item in value.items()}
        return {
            TAG: "dict",
            "items": [
                [self.encode(key, (path, "<>", f"key {i}")), self.encode(item, (path, "[]", key))]
                for i, (key, item) in enumerate(value.items())
            ],
        }

    def encode_fields(self, values: dict[str, Any], path: _Path) -> dict[str, Any]:
        """Field or attribute name -> value: always a plain object (its keys are names, never a tag)."""
        if not all(type(name) is str and not _DUNDER.fullmatch(name) for name in values):
            names = list(values)
            raise self.fail(path, f"cannot save attributes named {names!r}: each must be a str, not a dunder")
        return {name: self.encode(v, (path, ".", name)) for name, v in values.items()}

    def encode_dataclass(self, value: Any, cls: type, path: _Path) -> dict[str, Any]:
        data: dict[str, Any] = {TAG: "dataclass", "class": self.name(cls, "dataclass", path)}
        names = [f.name for f in dataclasses.fields(value)]
        data["fields"] = self.encode_fields({n: getattr(value, n) for n in names if hasattr(value, n)}, path)
        attrs = {k: v for k, v in getattr(value, "__dict__", {}).items() if k not in names}
        if attrs:
            data["attrs"] = self.encode_fields(attrs, path)
        return data

    def encode_model(self, value: BaseModel, cls: type, path: _Path) -> dict[str, Any]:
        data: dict[str, Any] = {TAG: "model", "class": self.name(cls, "model", path)}
        names = [n for n in cls.model_fields if n in value.__dict__]
        data["fields"] = self.encode_fields({n: value.__dict__[n] for n in names}, path)
        extra = getattr(value, "__pydantic_extra__", None) or {}
        unset = [n for n in [*names, *extra] if n not in value.model_fields_set]
        if unset:
            data["unset"] = unset
        if extra:
            data["extra"] = self.encode_fields(extra, path)
        private = getattr(value, "__pydantic_private__", None)
        if private:
            data["private"] = self.encode_fields(private, path)
        return data

    # -- decoding --------------------------------------------------------------------------------------------

    def decode(self, obj: Any, path: _Path) -> Any:
        cls = type(obj)
        if cls is str or cls is int or cls is bool or cls is float or obj is None:
            return obj
        if cls is not list and cls is not dict:
            raise self.fail(path, f"not JSON data: a {_type_name(obj)}")
        if self.depth >= MAX_DEPTH:
            raise self.fail(path, f"containers nest deeper than {MAX_DEPTH} levels")
        self.depth += 1
        try:
            return self.decode_container(obj, cls, path)
        finally:
            self.depth -= 1

    def decode_container(self, obj: Any, cls: type, path: _Path) -> Any:
        if cls is list:
            return [self.decode(item, (path, "[]", i)) for i, item in enumerate(obj)]
        if TAG not in obj:
            return {self.key(key, path): self.decode(item, (path, "[]", key)) for key, item in obj.items()}
        kind = obj[TAG]
        decoder = _DECODERS.get(kind) if isinstance(kind, str) else None
        if decoder is None:
            raise self.fail(path, f"unknown tag {TAG}={kind!r}")
        return decoder(self, obj, path)

    def key(self, key: Any, path: _Path) -> str:
        if type(key) is not str:
            raise self.fail(path, f"not JSON data: an object key {key!r} that is not a str")
        return key

    def items(self, obj: dict[str, Any], path: _Path, kind: str = "[]") -> list[Any]:
        """The decoded ``items`` of a tagged sequence; paths ``[i]``, or ``<item i>`` for a set."""
        items = obj.get("items")
        if type(items) is not list:
            raise self.fail(path, f"malformed {obj[TAG]!r} value: 'items' is {items!r}")
        if kind == "[]":
            return [self.decode(item, (path, "[]", i)) for i, item in enumerate(items)]
        return [self.decode(item, (path, "<>", f"item {i}")) for i, item in enumerate(items)]

    def decode_tuple(self, obj: dict[str, Any], path: _Path) -> tuple[Any, ...]:
        return tuple(self.items(obj, path))

    def decode_deque(self, obj: dict[str, Any], path: _Path) -> deque[Any]:
        maxlen = obj.get("maxlen")
        if maxlen is not None and (type(maxlen) is not int or not 0 <= maxlen <= sys.maxsize):
            raise self.fail(path, f"malformed 'deque' value: 'maxlen' is {_excerpt(maxlen)}")
        items = self.items(obj, path)
        if maxlen is not None and len(items) > maxlen:
            raise self.fail(path, f"malformed 'deque' value: {len(items)} items, more than its maxlen {maxlen}")
        return deque(items, maxlen)

    def decode_set(self, obj: dict[str, Any], path: _Path) -> set[Any] | frozenset[Any]:
        items = self.items(obj, path, "<>")
        try:
            return set(items) if obj[TAG] == "set" else frozenset(items)
        except TypeError as exc:
            raise self.fail(path, f"a set item cannot be hashed: {exc}") from exc

    def decode_dict(self, obj: dict[str, Any], path: _Path) -> dict[Any, Any]:
        pairs = obj.get("items")
        if type(pairs) is not list or not all(type(pair) is list and len(pair) == 2 for pair in pairs):
            raise self.fail(path, "malformed 'dict' value: 'items' is not a list of [key, value] pairs")
        result: dict[Any, Any] = {}
        for i, (raw_key, raw_value) in enumerate(pairs):
            key = self.decode(raw_key, (path, "<>", f"key {i}"))
            value = self.decode(raw_value, (path, "[]", key))
            try:
                result[key] = value
            except TypeError as exc:
                raise self.fail((path, "<>", f"key {i}"), f"a dict key cannot be hashed: {exc}") from exc
        return result

    def decode_float(self, obj: dict[str, Any], path: _Path) -> float:
        text = obj.get("value")
        if not isinstance(text, str) or text not in _SPECIAL_FLOATS:
            raise self.fail(path, f"malformed 'float' value: {text!r} is not 'nan', 'inf' or '-inf'")
        return _SPECIAL_FLOATS[text]

    def decode_fraction(self, obj: dict[str, Any], path: _Path) -> Fraction:
        text = obj.get("value")
        if not isinstance(text, str) or not _FRACTION.fullmatch(text):
            raise self.fail(path, f"malformed 'fraction' value: {_excerpt(text)} is not like '3/4'")
        try:
            return Fraction(text)
        except (ZeroDivisionError, ValueError) as exc:  # a zero denominator; digits past Python's limit
            raise self.fail(path, f"malformed 'fraction' value {_excerpt(text)}: {exc}") from exc

    def decode_enum(self, obj: dict[str, Any], path: _Path) -> Enum:
        cls = self.resolve(obj.get("class"), "enum", path)
        try:
            if "name" in obj:
                return cls.__members__[obj["name"]]
            return cls(self.decode(obj.get("value"), (path, ".", "value")))
        except (KeyError, TypeError, ValueError) as exc:
            member = obj.get("name", obj.get("value"))
            raise self.fail(path, f"{_class_name(cls)} has no member {member!r}") from exc

    def fields(self, obj: dict[str, Any], key: str, path: _Path) -> dict[str, Any]:
        """A dataclass's or model's ``key`` mapping: name -> decoded value (paths ``.name``); {} if absent.
        A name must be a str and no dunder (``__class__``, ``__dict__`` are never fields)."""
        raw = obj.get(key, {})
        if type(raw) is not dict or not all(type(n) is str and not _DUNDER.fullmatch(n) for n in raw):
            raise self.fail(path, f"malformed {obj[TAG]!r} value: {key!r} is {raw!r}")
        return {name: self.decode(item, (path, ".", name)) for name, item in raw.items()}

    def decode_dataclass(self, obj: dict[str, Any], path: _Path) -> Any:
        cls = self.resolve(obj.get("class"), "dataclass", path)
        declared = {f.name: f for f in dataclasses.fields(cls)}
        values = self.fields(obj, "fields", path)
        unknown = sorted(set(values) - set(declared))
        if unknown:
            raise self.fail(path, f"{_class_name(cls)} has no field(s) {unknown} (saved by another version?)")
        try:
            value = cls(**{name: v for name, v in values.items() if declared[name].init})
        except Exception as exc:  # the class's own __init__ / __post_init__ refused the saved values
            raise self.fail(path, f"cannot rebuild {_class_name(cls)}: {type(exc).__name__}: {exc}") from exc
        for name, v in values.items():
            if not declared[name].init:
                object.__setattr__(value, name, v)
        try:
            for name, v in self.fields(obj, "attrs", path).items():
                object.__setattr__(value, name, v)
        except AttributeError as exc:  # a slots class has no room for other attributes
            raise self.fail(path, f"cannot set attribute on {_class_name(cls)}: {exc}") from exc
        return value

    def decode_model(self, obj: dict[str, Any], path: _Path) -> BaseModel:
        cls = self.resolve(obj.get("class"), "model", path)
        values = self.fields(obj, "fields", path)
        unknown = sorted(set(values) - set(cls.model_fields))
        if unknown:
            raise self.fail(path, f"{_class_name(cls)} has no field(s) {unknown} (saved by another version?)")
        unset = obj.get("unset", [])
        if type(unset) is not list or not all(type(name) is str for name in unset):
            raise self.fail(path, f"malformed 'model' value: 'unset' is {unset!r}")
        extra = self.fields(obj, "extra", path)
        value = cls.model_construct(_fields_set=(set(values) | set(extra)) - set(unset), **values)
        if extra:
            object.__setattr__(value, "__pydantic_extra__", extra)
        private = self.fields(obj, "private", path)
        if private:
            private = {**(value.__pydantic_private__ or {}), **private}  # keeps defaults of newer attributes
            object.__setattr__(value, "__pydantic_private__", private)
        return value


_DECODERS = {
    "tuple": _Codec.decode_tuple,
    "deque": _Codec.decode_deque,
    "set": _Codec.decode_set,
    "frozenset": _Codec.decode_set,
    "dict": _Codec.decode_dict,
    "float": _Codec.decode_float,
    "fraction": _Codec.decode_fraction,
    "enum": _Codec.decode_enum,
    "dataclass": _Codec.decode_dataclass,
    "model": _Codec.decode_model,
}
