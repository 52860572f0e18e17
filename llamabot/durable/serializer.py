"""What durable runs store in the database, and how it is read back: JSON, never pickle.

DBOS keeps a run's inputs, result or error, every step's reply, approval events and decision messages as text
made by one serializer (its default pickles, and unpickling a crafted row runs any code). :class:`JsonSerializer`
writes every value as JSON through the run-state codec (:mod:`llamabot.graph.codec`: plain data, tuples, sets,
``llamabot``'s dataclasses, pydantic models and enums, classes a bot lists in ``state_classes``), in an envelope
``{"llamabot": 1, ...}`` with one of:

    "value": <encoded value>
    "error": {"class": "module:Qualname", "args": <encoded args>, "attrs": {...}, "message": "..."}
    "items": [{"value": ...} | {"error": ...}, ...]     (a tuple holding exceptions: a tool's (value, error))

(a graph's result: "value" without its trace, and "trace": its spans, attributes as data or else as text)

Reading never executes code: JSON is parsed, classes are only looked up (the codec's allow-list; exceptions:
builtins, ``llamabot``'s, and DBOS's own already-imported ones), an exception is made with ``cls.__new__`` and its
stored ``args`` and attributes (its ``__init__`` is not called, so every exception class comes back, with the same
type and message). Anything else is refused with :class:`RecordRefusedError`: text that is not this envelope (a
pickle written by an earlier version or by someone with access to the database), and rows that say they were
written by DBOS's pickle serializer (:func:`refuse_pickle` replaces DBOS's module-level pickle serializer, which
DBOS would otherwise pick for such a row whatever serializer is configured).

Writing refuses what cannot be read back with :class:`NotStorableError` naming its place; an exception whose class
cannot be restored (a third-party one) is stored as a ``RuntimeError`` reading ``"TypeName: message"``.
"""

from __future__ import annotations

import builtins
import copy
import json
import pkgutil
import re
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from dbos import Serializer

from llamabot.durable.errors import NotStorableError, RecordRefusedError
from llamabot.errors import excerpt
from llamabot.graph.codec import StateCodecError, decode_state, encode_state
from llamabot.graph.state_classes import MOVED_CLASSES
from llamabot.observe.tracing import Span, Trace
from llamabot.observe.usage import RunUsage

#: The envelope's version key: what :meth:`JsonSerializer.deserialize` accepts.
ENVELOPE = "llamabot"
#: The name DBOS records in each row's ``serialization`` column.
NAME = "llamabot_json"
_SPAN_FIELDS = ("span_id", "parent_id", "name", "kind", "start", "end", "error", "category", "trace_id")
#: Modules whose exception classes are restored when already imported (never imported for a row).
_TRUSTED_MODULES = ("dbos",)
_CLASS_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_DUNDER = re.compile(r"__.*__")
#: How much of a refused record an error message quotes.
_QUOTE = 60


class JsonSerializer(Serializer):
    """DBOS's serializer for llamabot: ``classes()`` gives the extra classes the codec may write and restore (the
    ``state_classes`` of the bots this process built)."""

    def __init__(self, classes: Callable[[], Iterable[type]] = tuple):
        self.classes_from(classes)

    def classes_from(self, classes: Callable[[], Iterable[type]]) -> None:
        """Take the extra classes from ``classes()`` from now on."""
        self._classes = classes

    def round_trip(self, value: Any, what: str) -> Any:
        """``value`` as a recovered run would read it back; :class:`NotStorableError` naming ``what`` when it
        cannot be stored or read back."""
        try:
            return self.deserialize(self.serialize(value))
        except RecordRefusedError as exc:
            raise NotStorableError(f"{what} would not be read back: {exc}") from None

    def name(self) -> str:
        return NAME

    # -- writing -----------------------------------------------------------------------------------------------

    def serialize(self, data: Any) -> str:
        return json.dumps({ENVELOPE: 1, **self.encode(data)}, allow_nan=False, separators=(",", ":"))

    def encode(self, data: Any, what: str = "the value") -> dict[str, Any]:
        """The envelope's body for ``data``; :class:`NotStorableError` naming ``what`` and the place inside."""
        if isinstance(data, BaseException):
            return {"error": self.encode_error(data)}
        if type(data) is tuple and any(isinstance(item, BaseException) for item in data):
            return {"items": [self.encode(item, f"{what}[{i}]") for i, item in enumerate(data)]}
        data, trace = _split_trace(data)
        try:
            body: dict[str, Any] = {"value": encode_state(data, allowed=self._classes())}
        except StateCodecError as exc:
            where = exc.path[len("state"):] if exc.path.startswith("state") else f" ({exc.path})"
            raise NotStorableError(f"{what}{where} cannot be stored with the durable run: {exc.reason}") from None
        if trace is not None:
            body["trace"] = trace
        return body

    def encode_error(self, exc: BaseException) -> dict[str, Any]:
        """``exc`` as a record that :meth:`decode_error` restores with the same type and message; never fails (a
        class that cannot be restored becomes ``RuntimeError("TypeName: message")``)."""
        message = _text(exc)
        cls = type(exc)
        name = f"{cls.__module__}:{cls.__qualname__}"
        attrs = {}
        for key, value in getattr(exc, "__dict__", {}).items():
            if type(key) is str and not _DUNDER.fullmatch(key):
                try:
                    attrs[key] = encode_state(value)
                except StateCodecError:
                    continue  # an attribute that is not data (an exception, a type) is left out
        candidates = []
        try:
            candidates.append({"class": name, "args": encode_state(exc.args), "attrs": attrs, "message": message})
        except StateCodecError:
            pass
        candidates.append({"class": name, "args": encode_state((message,)), "attrs": attrs, "message": message})
        for record in candidates:
            try:
                restored = self.decode_error(json.loads(json.dumps(record)))
            except Exception:  # noqa: BLE001 - any failure to restore means: store the stand-in below
                continue
            if type(restored) is cls and _text(restored) == message:
                return record
        text = f"{cls.__name__}: {message}" if message else cls.__name__
        return {"class": "builtins:RuntimeError", "args": encode_state((text,)), "attrs": {}, "message": text}

    # -- reading -----------------------------------------------------------------------------------------------

    def deserialize(self, serialized_data: str) -> Any:
        text = serialized_data
        if not isinstance(text, str) or not text.startswith("{"):
            raise _refused(text, "it is not llamabot's JSON (a pickle, from an earlier llamabot or written into "
                                 "the database by someone else?)")
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise _refused(text, f"it is not JSON ({exc})") from None
        if not isinstance(record, dict) or record.get(ENVELOPE) != 1:
            raise _refused(text, f'it is not a llamabot record ({{"{ENVELOPE}": 1, ...}})')
        try:
            return self.decode({k: v for k, v in record.items() if k != ENVELOPE})
        except StateCodecError as exc:
            raise _refused(text, str(exc)) from None

    def decode(self, body: Any) -> Any:
        if type(body) is dict and set(body) == {"value", "trace"}:
            return _join_trace(decode_state(body["value"], allowed=self._classes()), body["trace"])
        if type(body) is not dict or len(body) != 1:
            raise StateCodecError("record", "expected one of 'value', 'error', 'items'")
        (kind, data), = body.items()
        if kind == "value":
            return decode_state(data, allowed=self._classes())
        if kind == "error":
            return self.decode_error(data)
        if kind == "items" and type(data) is list:
            return tuple(self.decode(item) for item in data)
        raise StateCodecError("record", f"unknown kind {kind!r}")

    def decode_error(self, record: Any) -> BaseException:
        """The exception ``record`` describes, made without calling its ``__init__``."""
        if type(record) is not dict or type(record.get("attrs", {})) is not dict:
            raise StateCodecError("error", "malformed exception record")
        cls = _exception_class(record.get("class"))
        args = decode_state(record.get("args", []))
        args = tuple(args) if type(args) is list else args
        if type(args) is not tuple:
            raise StateCodecError("error", f"the args of {record.get('class')} are not a tuple")
        exc = _instance(cls, args)
        exc.args = args
        for key, value in record.get("attrs", {}).items():
            if type(key) is not str or _DUNDER.fullmatch(key) or not hasattr(exc, "__dict__"):
                raise StateCodecError("error", f"cannot set attribute {key!r} on {record.get('class')}")
            exc.__dict__[key] = decode_state(value)
        return exc


def _split_trace(data: Any) -> tuple[Any, dict[str, Any] | None]:
    """A graph's result carries its run's trace: spans whose attributes hold live objects (requests, usage
    counters, the result itself), which are observability, not data. ``data`` without it (a copy; ``data`` is not
    changed) and the trace as a record: its id, usage and spans, each attribute as data, else as its ``repr``
    (an attribute holding the result itself is noted in ``loops`` and put back by :func:`_join_trace`)."""
    trace = getattr(data, "trace", None)
    if type(trace) is not Trace:
        return data, None
    spans, loops = [], []
    for i, span in enumerate(trace.spans):
        attributes = {}
        for key, value in span.attributes.items():
            if value is data:
                loops.append([i, key])
                continue
            try:
                attributes[key] = encode_state(value)
            except StateCodecError:
                attributes[key] = excerpt(value, 2000)
        spans.append({**{f: getattr(span, f) for f in _SPAN_FIELDS}, "attributes": attributes})
    cut = copy.copy(data)
    object.__setattr__(cut, "trace", None)
    return cut, {"trace_id": trace.trace_id, "usage": trace.usage.to_dict(), "spans": spans, "loops": loops}


def _join_trace(value: Any, record: Any) -> Any:
    """Put the trace :func:`_split_trace` took out back into ``value``."""
    if not hasattr(value, "trace") or type(record) is not dict or type(record.get("spans")) is not list:
        raise StateCodecError("record", "malformed 'trace'")
    try:
        spans = [Span(**{f: item[f] for f in _SPAN_FIELDS}, attributes={k: decode_state(v) for k, v in
                                                                         item["attributes"].items()})
                 for item in record["spans"]]
        trace = Trace(str(record["trace_id"]), spans, RunUsage.from_dict(record["usage"]))
        for index, key in record["loops"]:
            spans[index].attributes[key] = value
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise StateCodecError("record", f"malformed 'trace': {type(exc).__name__}: {exc}") from None
    object.__setattr__(value, "trace", trace)
    return value


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not stop the error from being stored
        return f"<{type(exc).__name__} whose message cannot be shown>"


_REFUSED: dict[str, RecordRefusedError] = {}  # recent refused texts -> why (see refusal)
_REFUSED_LOCK = threading.Lock()


def _refused(text: Any, why: str) -> RecordRefusedError:
    shown = text if not isinstance(text, str) or len(text) <= _QUOTE else f"{text[:_QUOTE]}... ({len(text)} chars)"
    error = RecordRefusedError(f"refused to load a record of the durable-runs database: {why}; record: {shown!r}")
    if isinstance(text, str):
        with _REFUSED_LOCK:
            if len(_REFUSED) >= 256:
                _REFUSED.clear()
            _REFUSED[text] = error
    return error


def refusal(value: Any) -> RecordRefusedError | None:
    """The error a recent read of ``value`` raised, when ``value`` is the raw text of a refused record (DBOS's
    listing functions log a record they cannot read and return its raw text in its place)."""
    if not isinstance(value, str):
        return None
    with _REFUSED_LOCK:
        return _REFUSED.get(value)


def _exception_class(name: Any) -> type[BaseException]:
    """The exception class ``name`` names: a builtin, one of llamabot's (imported like the codec does), or one of
    an already-imported trusted module's. Never imports anything else, never calls anything."""
    if not isinstance(name, str) or not _CLASS_NAME.fullmatch(name):
        raise StateCodecError("error", f"{name!r} is not a class name of the form 'module:Qualname'")
    name = MOVED_CLASSES.get(name, name)  # a class that moved since the record was written
    module, _, qualname = name.partition(":")
    cls: Any = None
    if module == "builtins" and "." not in qualname:
        cls = getattr(builtins, qualname, None)
    elif module == "llamabot" or module.startswith("llamabot."):
        try:
            cls = pkgutil.resolve_name(name)
        except Exception as exc:  # noqa: BLE001 - a missing module or name
            raise StateCodecError("error", f"cannot find exception class {name}: {exc}") from None
    elif module.split(".", 1)[0] in _TRUSTED_MODULES and module in sys.modules:
        cls = sys.modules[module]
        for part in qualname.split("."):
            cls = getattr(cls, part, None)
    if not isinstance(cls, type) or not issubclass(cls, BaseException):
        raise StateCodecError("error", f"{name} is not an exception class that may be restored")
    if f"{cls.__module__}:{cls.__qualname__}" != name:
        raise StateCodecError("error", f"{name} is not a class defined under that name")
    return cls


def _instance(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    """A new ``cls`` without its ``__init__``: its own ``__new__``, else that of the builtin exception that lays it
    out (a class with two builtin bases, e.g. ``RuntimeError`` and ``TimeoutError``, needs ``OSError.__new__``)."""
    for maker in (cls, *(base for base in cls.__mro__ if base.__module__ == "builtins")):
        try:
            return maker.__new__(cls, *args)  # type: ignore[call-overload]
        except TypeError:
            continue
    raise StateCodecError("error", f"cannot make a {cls.__qualname__}")


class _PickleRefused(Serializer):
    """Stands in for DBOS's pickle serializer: DBOS picks it for any row whose ``serialization`` column says
    ``py_pickle``, whatever serializer is configured. Reading such a row is refused; nothing is ever pickled."""

    def name(self) -> str:
        return "py_pickle"

    def serialize(self, data: Any) -> str:
        raise NotStorableError("durable runs never store pickles: llamabot's JSON serializer stores every value")

    def deserialize(self, serialized_data: str) -> Any:
        raise _refused(serialized_data, "it says it is a pickle (serialization 'py_pickle'); llamabot never "
                                        "unpickles what is in its database")


#: The serializer of this process's durable runtime and clients (the runtime gives it the bots' classes).
SERIALIZER = JsonSerializer()


def refuse_pickle() -> None:
    """Make DBOS refuse rows marked ``py_pickle`` instead of unpickling them (idempotent; process-wide, like DBOS)."""
    import dbos._serialization as dbos_serialization

    if not isinstance(dbos_serialization.DBOSDefaultSerializer, _PickleRefused):
        dbos_serialization.DBOSDefaultSerializer = _PickleRefused()
