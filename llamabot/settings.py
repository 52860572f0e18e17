"""llamabot's settings read from the environment: every variable in one table (:data:`SETTINGS`: name, type,
default, bounds, what it does), each read through :func:`setting` and checked when read.

The README's Configuration table is checked against :data:`SETTINGS` (``tests/test_settings.py``), and every
``LLAMABOT_*`` name the package reads must be in it.

A blank or unset variable gives the default. A value that is not what the variable takes raises
:class:`SettingsError` naming the variable, the value (an excerpt) and what it accepts: only ASCII digits
(``1_000``, ``1e3``, ``١٢`` and 20-digit numbers are refused, where ``int()`` would take the first three), within
the variable's bounds; a path whose ``~user`` cannot be expanded is refused the same way.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llamabot.cores import usable_cores
from llamabot.errors import SettingsError, excerpt

_DIGITS = re.compile(r"[0-9]{1,18}")  # ASCII only; 18 digits always fit a 64-bit integer
_DECIMAL = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})?")


def _raw(name: str) -> str | None:
    """The variable's value, stripped; ``None`` when it is unset or blank."""
    raw = os.environ.get(name, "").strip()
    return raw or None


def env_int(name: str, default: int, *, minimum: int = 0, maximum: int = 10**15) -> int:
    """``$name`` as a whole number in ``[minimum, maximum]`` (ASCII digits only), else ``default`` when unset or
    blank. Raises :class:`SettingsError` naming the variable otherwise."""
    raw = _raw(name)
    if raw is None:
        return default
    value = int(raw) if _DIGITS.fullmatch(raw) else None
    if value is None or not minimum <= value <= maximum:
        raise SettingsError(
            f"${name}={excerpt(raw, 40)}: expected a whole number from {minimum} to {maximum}, written with the "
            f"digits 0-9 only; unset it to use {default}"
        )
    return value


def env_seconds(name: str, default: float | None, *, maximum: float = 86_400.0) -> float | None:
    """``$name`` as a number of seconds, more than 0 and at most ``maximum`` (``60``, ``2.5``), else ``default``
    when unset or blank. Raises :class:`SettingsError` naming the variable otherwise."""
    raw = _raw(name)
    if raw is None:
        return default
    value = float(raw) if _DECIMAL.fullmatch(raw) else None
    if value is None or not 0 < value <= maximum:
        raise SettingsError(
            f"${name}={excerpt(raw, 40)}: expected seconds, more than 0 and at most {maximum:g}, like 60 or 2.5; "
            f"unset it to use {default}"
        )
    return value


def expand_path(text: str, where: str) -> Path:
    """``text`` with ``~`` / ``~user`` expanded. Raises :class:`SettingsError` naming ``where`` (``$NAME``, "the
    db argument") when the home directory cannot be found (``~nosuchuser``)."""
    try:
        return Path(text).expanduser()
    except RuntimeError as exc:  # pathlib: "Could not determine home directory."
        raise SettingsError(
            f"{where}={excerpt(text, 80)}: cannot expand {text.split('/', 1)[0]!r} ({exc}); give an absolute path "
            "or an existing user's ~user"
        ) from None


def env_path(name: str) -> Path | None:
    """``$name`` as a path (``~`` expanded, see :func:`expand_path`), or ``None`` when unset or blank."""
    raw = _raw(name)
    return None if raw is None else expand_path(raw, f"${name}")


@dataclass(frozen=True, slots=True)
class Setting:
    """One environment variable: ``kind`` is ``int`` (a whole number in ``[minimum, maximum]``), ``seconds``
    (more than 0, at most ``maximum``), ``path`` (``~`` expanded) or ``text``; ``default`` is the value when it is
    unset or blank (a callable: computed then, e.g. from the core count); ``help`` says what it does."""

    name: str
    kind: str
    default: Any
    help: str
    minimum: int = 0
    maximum: int = 10**15


_MIB = 1 << 20

#: Every environment variable llamabot reads (the owning module reads it with :func:`setting`).
SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("LLAMABOT_MODEL", "text", None, "default model string when a bot gets no model="),
    Setting("LLAMABOT_DB", "text", None, "where durable runs are kept (sqlite:///path or postgresql://...)"),
    Setting("LLAMABOT_CACHE_DIR", "path", None, "where assembled models live"),
    Setting("LLAMABOT_LOCAL_N_CTX", "int", 8192, "llama.cpp context size", 256, 1 << 20),
    Setting("LLAMABOT_LOCAL_THREADS", "int", usable_cores, "llama.cpp threads (the usable physical cores)", 1, 1024),
    Setting("LLAMABOT_LOCAL_BATCH", "int", 512, "llama.cpp batch size", 8, 1 << 20),
    Setting("LLAMABOT_LOCAL_SEQUENCES", "int", 4, "requests the embedded model decodes together", 1, 256),
    Setting("LLAMABOT_LOCAL_QUEUE", "int", 256, "requests that may wait for the embedded model", 1, 1 << 20),
    Setting("LLAMABOT_LOCAL_PREFILL_CHUNK", "int", 128, "prompt tokens read per step while others decode",
            1, 1 << 20),
    Setting("LLAMABOT_PREFIX_CACHE_DIR", "path", None, "saved prompt prefixes of the embedded model"),
    Setting("LLAMABOT_PREFIX_CACHE_BYTES", "int", 2048 * _MIB, "prefix cache on disk (0: off)", 0, 1 << 50),
    Setting("LLAMABOT_PREFIX_MEMORY_BYTES", "int", 512 * _MIB, "prefix cache in memory per model (0: off)",
            0, 1 << 50),
    Setting("LLAMABOT_TOOL_RESULT_CHARS", "int", 100_000, "characters of a tool result the model is shown",
            100, 10**15),
    Setting("LLAMABOT_MCP_TIMEOUT", "seconds", 60.0, "seconds an MCP server may take to answer one call",
            0, 86_400),
    Setting("LLAMABOT_MCP_MAX_DESCRIPTION_CHARS", "int", 10_000, "largest MCP tool description", 1, 10**7),
    Setting("LLAMABOT_MCP_MAX_SCHEMA_CHARS", "int", 100_000, "largest MCP input schema (as JSON)", 1, 10**8),
    Setting("LLAMABOT_MCP_MAX_MESSAGE_BYTES", "int", 32 * _MIB, "largest message read from a stdio MCP server",
            4096, 1 << 34),
    Setting("LLAMABOT_DURABLE_GRACE_S", "int", 20, "seconds a stopping worker lets in-flight steps finish",
            0, 3600),
    Setting("LLAMABOT_DURABLE_HEARTBEAT_S", "int", 5, "seconds between a worker's heartbeats", 1, 3600),
    Setting("LLAMABOT_DURABLE_ORPHAN_S", "int", 60, "seconds without a heartbeat before a worker's runs are "
            "recovered by another", 2, 86_400),
    Setting("LLAMABOT_CONSOLE_TOKEN", "text", None, "the token llamabot console requires off loopback"),
    Setting("ANOT_DEBUG", "int", 0, "ANoT's debug level, 0 (off) to 3", 0, 3),
)}


def setting(name: str) -> Any:
    """The value of the registered variable ``name`` (see :data:`SETTINGS`), read and checked now; ``KeyError``
    for a name that is not registered (every variable is declared once, here)."""
    spec = SETTINGS[name]
    if _raw(name) is None:
        _check_spelling(name)
    default = spec.default() if callable(spec.default) else spec.default
    if spec.kind == "int":
        return env_int(name, default, minimum=spec.minimum, maximum=spec.maximum)
    if spec.kind == "seconds":
        return env_seconds(name, default, maximum=spec.maximum)
    if spec.kind == "path":
        return env_path(name) or default
    return _raw(name) or default


def _check_spelling(name: str) -> None:
    """:class:`SettingsError` when ``$name`` is unset but a variable spelled almost like it is set (a typo such as
    ``..._GRACE`` for ``LLAMABOT_DURABLE_GRACE_S`` would otherwise leave the default in force unsaid).
    Only unregistered names of llamabot's prefixes are considered."""
    prefix = name.split("_", 1)[0] + "_"
    others = [k for k in os.environ if k.startswith(prefix) and k not in SETTINGS and os.environ[k].strip()]
    close = difflib.get_close_matches(name, others, n=1, cutoff=0.85)
    if close:
        raise SettingsError(f"${close[0]} is set but llamabot reads ${name} ({SETTINGS[name].help}); rename it, "
                            f"or unset ${close[0]}")
