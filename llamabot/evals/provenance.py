"""What an evaluation report must say about how it was made, so that two reports can be compared honestly: the
model, the decoding settings of each method, a version of every prompt (the sha256 of its text) and the
commit of the code (``git rev-parse HEAD``, ``"unknown"`` outside a git checkout).

Every ``llamabot eval`` report carries :func:`provenance` under the key ``"provenance"``;
:func:`provenance_differences` lists what differs between two of them, and :func:`check_resumable` says whether an
interrupted report may be continued by a run made now (``--resume``).
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from llamabot.errors import LlamabotError

UNKNOWN = "unknown"

#: Decoding settings a method leaves unset take the model's defaults; for the embedded ``local/*`` models that
#: is greedy decoding (temperature 0). Recorded with every report, so that an unset value is not ambiguous.
DEFAULTS_NOTE = "unset settings use the model's defaults (local/* models: temperature 0, greedy)"


def prompt_version(texts: str | Iterable[str]) -> str:
    """The sha256 (hex) of a prompt's text, or of several texts in order (each length-prefixed, so that moving
    text from one to the next changes the version)."""
    digest = hashlib.sha256()
    for text in [texts] if isinstance(texts, str) else texts:
        data = text.encode("utf-8")
        digest.update(f"{len(data)}:".encode())
        digest.update(data)
    return digest.hexdigest()


def git_commit(where: str | Path | None = None) -> str:
    """The commit checked out where ``where`` is (default: this package's source), with ``+dirty`` when
    tracked files differ from it; ``"unknown"`` when git or the checkout is not there."""
    folder = Path(where) if where is not None else Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return UNKNOWN
        dirty = subprocess.run(
            ["git", "diff", "--quiet", "HEAD", "--"], cwd=folder, capture_output=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    commit = head.stdout.strip()
    return f"{commit}+dirty" if dirty.returncode == 1 else commit


def _version() -> str:
    try:
        return metadata.version("llamabot")
    except metadata.PackageNotFoundError:
        return UNKNOWN


def provenance(
    model: str, decoding: Mapping[str, Mapping[str, Any]], prompts: Mapping[str, str | Iterable[str]]
) -> dict[str, Any]:
    """The provenance block of a report. ``model``: the model's name as the seam resolved it. ``decoding``:
    method -> the settings its calls were made with (temperature, max_tokens, samples...; unset keys are the
    model's defaults, see :data:`DEFAULTS_NOTE`). ``prompts``: name -> the prompt text(s) used, recorded as
    their sha256 (:func:`prompt_version`)."""
    if not isinstance(model, str) or not model:
        raise ValueError(f"provenance needs the model's name, got {model!r}")
    return {
        "model": model,
        "decoding": {method: dict(settings) for method, settings in decoding.items()},
        "decoding_defaults": DEFAULTS_NOTE,
        "prompts": {name: prompt_version(texts) for name, texts in prompts.items()},
        "commit": git_commit(),
        "llamabot": _version(),
        "python": platform.python_version(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


#: Keys that differ between any two runs and say nothing about comparability.
_INCIDENTAL = ("created",)


def provenance_differences(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """What differs between two provenance blocks (model, a method's decoding, a prompt's version, the commit...),
    one line each, e.g. ``prompts.aot: 3f2a... != 91bc...``; empty when the reports are comparable."""
    differences: list[str] = []

    def walk(path: str, a: Any, b: Any) -> None:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in sorted(set(a) | set(b), key=str):
                walk(f"{path}.{key}" if path else str(key), a.get(key), b.get(key))
        elif a != b and path not in _INCIDENTAL:
            differences.append(f"{path}: {a!r} != {b!r}")

    walk("", first, second)
    return differences


#: Provenance that may differ between a report and its resumption (recorded under ``resumed_from``): the code
#: version and the moment. The model, the decoding settings and the prompt versions must match.
RESUMABLE = ("commit", "created", "llamabot", "python")


class ResumeError(LlamabotError, ValueError):
    """A report to resume that another model, other settings or other prompts made; the message names each
    difference."""


def check_resumable(before: Mapping[str, Any], now: dict[str, Any], differences: Iterable[str] = ()) -> None:
    """Check that a report whose provenance is ``before`` may be continued by a run whose provenance is ``now``:
    the same model, decoding settings and prompt versions (the code version and the moment may differ). Raises
    :class:`ResumeError` naming every difference, ``differences`` (the caller's own: dataset, configuration...)
    included; else records ``before``'s code version and moment under ``now["resumed_from"]`` (a list: a report
    may be resumed more than once)."""
    kept_apart = (*RESUMABLE, "resumed_from")
    found = provenance_differences({k: v for k, v in before.items() if k not in kept_apart},
                                   {k: v for k, v in now.items() if k not in kept_apart})
    found += list(differences)
    if found:
        raise ResumeError("the report to resume was made differently: " + "; ".join(found))
    now["resumed_from"] = [*before.get("resumed_from", []), {k: before.get(k) for k in RESUMABLE}]
