"""Prompt-prefix caches of the embedded model: the model state after a token prefix, kept so that a prompt that
starts with the same tokens skips re-reading them. Pure Python, no llama.cpp: the state is opaque bytes here.

- :class:`PrefixKey` names the context a state belongs to: the model file's identity (its sha256 for the
  registry's models), the llama.cpp version, the context settings and the exact token prefix. A state is only
  ever restored under an equal key.
- :class:`MemoryPrefixCache`: in-process, bounded in bytes, least recently used first out; ``longest(tokens)``
  finds the longest cached prefix of a prompt, so alternating prompt families keep their own prefixes.
- :class:`DiskPrefixCache`: persistent, one file per state under the user's cache directory, written atomically
  (temporary file + ``os.replace``), bounded in bytes (least recently used files removed). Each file carries its
  full key and a sha256 of its data; a file that is truncated, corrupt or written for another key is deleted and
  reported as a miss, so it is rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: First bytes of every state file; the number is the file format's version.
MAGIC = b"LLAMABOT-PREFIX-1\n"
SUFFIX = ".state"


@dataclass(frozen=True, slots=True)
class PrefixKey:
    """What a saved state depends on. ``digest`` names it; ``header`` is what a state file records."""

    model_id: str
    runtime: str
    context: str
    tokens: tuple[int, ...]

    @property
    def header(self) -> dict[str, object]:
        return {
            "model_id": self.model_id,
            "runtime": self.runtime,
            "context": self.context,
            "tokens": list(self.tokens),
        }

    @property
    def digest(self) -> str:
        text = json.dumps(self.header, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class PrefixState:
    """The model state after ``tokens`` (opaque bytes from llama.cpp)."""

    tokens: tuple[int, ...]
    data: bytes

    @property
    def nbytes(self) -> int:
        return len(self.data) + 4 * len(self.tokens)


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class MemoryPrefixCache:
    """States of several prefixes in memory, at most ``max_bytes`` in all (least recently used evicted first).

    Thread-safe; a state larger than the whole budget is not kept.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, ...], PrefixState] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, state: PrefixState) -> None:
        if state.nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(state.tokens, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._entries[state.tokens] = state
            self._bytes += state.nbytes
            while self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.nbytes

    def longest(self, tokens: Sequence[int], *, shorter_than: int | None = None) -> PrefixState | None:
        """The cached state with the longest token prefix of ``tokens`` (strictly shorter than ``shorter_than``
        tokens when given); marks it as recently used."""
        limit = len(tokens) if shorter_than is None else shorter_than
        best: PrefixState | None = None
        with self._lock:
            for key, state in self._entries.items():
                n = len(key)
                if n < limit and (best is None or n > len(best.tokens)) and tuple(tokens[:n]) == key:
                    best = state
            if best is not None:
                self._entries.move_to_end(best.tokens)
        return best


class DiskPrefixCache:
    """States saved as files under ``directory``, at most ``max_bytes`` of them (least recently used removed).

    ``get`` returns the state only when the file's recorded key equals the asked key and its data matches its
    recorded sha256; anything else (truncated, corrupt, another key) is deleted and read as a miss.
    """

    def __init__(self, directory: Path, max_bytes: int):
        self.directory = directory
        self.max_bytes = max_bytes

    def path(self, key: PrefixKey) -> Path:
        return self.directory / f"{key.digest}{SUFFIX}"

    def get(self, key: PrefixKey) -> PrefixState | None:
        path = self.path(key)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        state = _decode(raw, key)
        if state is None:
            path.unlink(missing_ok=True)
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass
        return state

    def put(self, key: PrefixKey, state: PrefixState) -> Path | None:
        """Write ``state`` under ``key`` atomically, then trim the directory to the byte budget. A state larger than
        the whole budget is not written (returns ``None``)."""
        blob = _encode(key, state)
        if len(blob) > self.max_bytes:
            return None
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.path(key)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        self.trim(keep=target)
        return target

    def entries(self) -> list[tuple[Path, int, float]]:
        """``(path, size, last used)`` of every state file, oldest first."""
        found = []
        try:
            candidates = list(self.directory.glob(f"*{SUFFIX}"))
        except OSError:
            return []
        for path in candidates:
            try:
                stat = path.stat()
            except OSError:
                continue
            found.append((path, stat.st_size, stat.st_mtime))
        return sorted(found, key=lambda entry: entry[2])

    def nbytes(self) -> int:
        return sum(size for _, size, _ in self.entries())

    def describe(self) -> list[SavedPrefix]:
        """What each state file says it holds (read from its header only; unreadable files are skipped)."""
        found = []
        for path, size, used in self.entries():
            header = read_header(path)
            if header is not None:
                found.append(
                    SavedPrefix(
                        path, size, used, str(header.get("model_id")), len(header.get("tokens") or [])
                    )
                )
        return found

    def trim(self, keep: Path | None = None) -> None:
        """Remove least recently used files until the directory holds at most ``max_bytes``."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        for path, size, _ in entries:
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            path.unlink(missing_ok=True)
            total -= size

    def clear(self) -> int:
        """Delete every state file; returns how many bytes were freed."""
        freed = 0
        for path, size, _ in self.entries():
            path.unlink(missing_ok=True)
            freed += size
        return freed


@dataclass(frozen=True, slots=True)
class SavedPrefix:
    """One state file as listed by ``llamabot models``."""

    path: Path
    size: int
    last_used: float
    model_id: str
    n_tokens: int


def read_header(path: Path) -> dict | None:
    """The JSON header of a state file, or ``None`` if it is not one."""
    try:
        with open(path, "rb") as handle:
            if handle.read(len(MAGIC)) != MAGIC:
                return None
            header = json.loads(handle.readline())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return header if isinstance(header, dict) else None


def _encode(key: PrefixKey, state: PrefixState) -> bytes:
    header = {**key.header, "nbytes": len(state.data), "sha256": hashlib.sha256(state.data).hexdigest()}
    return MAGIC + json.dumps(header, separators=(",", ":")).encode() + b"\n" + state.data


def _decode(raw: bytes, key: PrefixKey) -> PrefixState | None:
    """The state in ``raw`` if it is a well-formed file for exactly ``key``, else ``None``."""
    if not raw.startswith(MAGIC):
        return None
    end = raw.find(b"\n", len(MAGIC))
    if end < 0:
        return None
    try:
        header = json.loads(raw[len(MAGIC) : end])
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(header, dict) or any(header.get(k) != v for k, v in key.header.items()):
        return None
    data = raw[end + 1 :]
    if header.get("nbytes") != len(data) or header.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    return PrefixState(key.tokens, data)
