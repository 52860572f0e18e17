"""llamabot's settings read from the environment: whole numbers, seconds and paths, each checked when read.

A blank or unset variable gives the default. A value that is not what the variable takes raises
:class:`SettingsError` naming the variable, the value (an excerpt) and what it accepts: only ASCII digits
(``1_000``, ``1e3``, ``١٢`` and 20-digit numbers are refused, where ``int()`` would take the first three), within
the variable's bounds; a path whose ``~user`` cannot be expanded is refused the same way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

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
