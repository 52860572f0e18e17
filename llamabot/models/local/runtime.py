"""The loaded embedded model: llama.cpp settings, one loaded model per file per process, and its caches.

- :class:`LocalSettings` are read from the environment (``LLAMABOT_LOCAL_THREADS``, ``LLAMABOT_LOCAL_BATCH``,
  ``LLAMABOT_LOCAL_N_CTX``; prefix caches: ``LLAMABOT_PREFIX_CACHE_DIR``, ``LLAMABOT_PREFIX_CACHE_BYTES``,
  ``LLAMABOT_PREFIX_MEMORY_BYTES``, a budget of 0 turning that cache off). The defaults were chosen by
  measurement (docs/design/models/LLD.md, "Settings"); a value that is not a whole number within its bounds (ASCII
  digits only) raises :class:`LocalSettingsError` naming the variable.
- ``loaded_model(name)`` loads a model once per resolved file and shares it. llama.cpp is not thread-safe: each
  :class:`LoadedModel` has one :class:`~llamabot.models.local.scheduler.Scheduler` whose thread alone decodes,
  batching concurrent requests (``LLAMABOT_LOCAL_SEQUENCES`` at once, ``LLAMABOT_LOCAL_QUEUE`` waiting,
  ``LLAMABOT_LOCAL_PREFILL_CHUNK`` prompt tokens per step while others decode). The ``Llama`` object itself
  keeps a minimal context: it serves the tokenizer, the metadata and the weights. Every model is closed at exit.

Imports llama.cpp (inside ``_load``) but never LiteLLM.
"""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llamabot.errors import ModelFileError, SettingsError
from llamabot.models.local.prefix_cache import DiskPrefixCache, MemoryPrefixCache
from llamabot.models.local.scheduler import Scheduler
from llamabot.models.registry import LOCAL_MODELS, cache_dir, ensure_model_file
from llamabot.settings import SETTINGS, setting


class LocalSettingsError(SettingsError):
    """An environment variable that configures the embedded model has a value that cannot be used."""


@dataclass(frozen=True, slots=True)
class LocalSettings:
    """How llama.cpp runs the embedded model, and how large its prefix caches may grow."""

    n_ctx: int = SETTINGS["LLAMABOT_LOCAL_N_CTX"].default
    n_threads: int = 1
    n_batch: int = SETTINGS["LLAMABOT_LOCAL_BATCH"].default
    prefix_dir: Path = field(default_factory=lambda: cache_dir() / "prefixes")
    disk_bytes: int = SETTINGS["LLAMABOT_PREFIX_CACHE_BYTES"].default
    memory_bytes: int = SETTINGS["LLAMABOT_PREFIX_MEMORY_BYTES"].default
    sequences: int = SETTINGS["LLAMABOT_LOCAL_SEQUENCES"].default
    queue: int = SETTINGS["LLAMABOT_LOCAL_QUEUE"].default
    prefill_chunk: int = SETTINGS["LLAMABOT_LOCAL_PREFILL_CHUNK"].default

    @classmethod
    def from_env(cls) -> LocalSettings:
        # Threads: the usable physical cores by default (llamabot.cores); see the models LLD for why.
        try:
            return cls(
                n_ctx=setting("LLAMABOT_LOCAL_N_CTX"),
                n_threads=setting("LLAMABOT_LOCAL_THREADS"),
                n_batch=setting("LLAMABOT_LOCAL_BATCH"),
                prefix_dir=setting("LLAMABOT_PREFIX_CACHE_DIR") or cache_dir() / "prefixes",
                disk_bytes=setting("LLAMABOT_PREFIX_CACHE_BYTES"),
                memory_bytes=setting("LLAMABOT_PREFIX_MEMORY_BYTES"),
                sequences=setting("LLAMABOT_LOCAL_SEQUENCES"),
                queue=setting("LLAMABOT_LOCAL_QUEUE"),
                prefill_chunk=setting("LLAMABOT_LOCAL_PREFILL_CHUNK"),
            )
        except SettingsError as exc:
            raise LocalSettingsError(str(exc)) from None

    @property
    def context(self) -> str:
        """The settings a saved model state depends on (part of every prefix-cache key)."""
        return f"n_ctx={self.n_ctx},n_batch={self.n_batch},kv=f16,unified"


def model_identity(name: str, path: Path) -> str:
    """What identifies the weights: the registry's verified sha256 for an alias; for any other GGUF file its
    resolved path, size and modification time (hashing gigabytes at every start would cost more than it saves)."""
    spec = LOCAL_MODELS.get(name)
    if spec is not None:
        return f"sha256:{spec.sha256}"
    stat = path.stat()
    return f"file:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


@dataclass
class LoadedModel:
    """A llama.cpp model, its chat formatter, the scheduler that alone decodes with it, and its prefix caches."""

    path: str
    llm: Any
    formatter: Any
    scheduler: Scheduler
    identity: str = ""
    settings: LocalSettings = field(default_factory=LocalSettings)
    memory: MemoryPrefixCache | None = None
    disk: DiskPrefixCache | None = None

    def close(self) -> None:
        self.scheduler.close()
        close = getattr(self.llm, "close", None)
        if close is not None:
            close()


_loaded: dict[str, LoadedModel] = {}
_load_lock = threading.Lock()


def loaded_model(name: str) -> LoadedModel:
    """The shared, loaded model for ``name`` (an alias or a GGUF path); loads it on first use."""
    path = ensure_model_file(name)
    model = _loaded.get(str(path))
    if model is not None:
        return model
    with _load_lock:
        model = _loaded.get(str(path))
        if model is None:
            model = _load(name, path, LocalSettings.from_env())
            _loaded[str(path)] = model
    return model


def loaded_models() -> list[LoadedModel]:
    """The models loaded in this process."""
    return list(_loaded.values())


def _load(name: str, path: Path, settings: LocalSettings) -> LoadedModel:
    try:
        import llama_cpp
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ModelFileError(
            'the embedded model needs llama-cpp-python: pip install "llamabot[local]"'
        ) from exc
    # The scheduler's context does the work; this one only has to exist (64 tokens keep its buffers small).
    llm = Llama(model_path=str(path), n_ctx=64, n_batch=64, n_threads=1, verbose=False)
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise ModelFileError(f"{path} has no chat template; the embedded provider needs an instruct model")
    eos = llm._model.token_get_text(llm.token_eos()) if llm.token_eos() != -1 else ""
    bos = llm._model.token_get_text(llm.token_bos()) if llm.token_bos() != -1 else ""
    formatter = Jinja2ChatFormatter(
        template=template, eos_token=eos, bos_token=bos, stop_token_ids=[llm.token_eos()]
    )
    # Recurrent and hybrid models cannot drop a suffix of their memory, so a restored prefix would be unusable.
    # llama_model_is_hybrid exists in newer llama.cpp builds only.
    is_hybrid = getattr(llama_cpp, "llama_model_is_hybrid", lambda model: False)
    prefixable = not (llama_cpp.llama_model_is_recurrent(llm.model) or is_hybrid(llm.model))
    memory = MemoryPrefixCache(settings.memory_bytes) if prefixable and settings.memory_bytes > 0 else None
    disk = (
        DiskPrefixCache(settings.prefix_dir, settings.disk_bytes)
        if prefixable and settings.disk_bytes > 0
        else None
    )
    scheduler = Scheduler(
        llm,
        n_ctx=settings.n_ctx,
        n_batch=settings.n_batch,
        n_threads=settings.n_threads,
        sequences=settings.sequences,
        queue_size=settings.queue,
        prefill_chunk=settings.prefill_chunk,
    )
    return LoadedModel(str(path), llm, formatter, scheduler, model_identity(name, path), settings, memory, disk)


@atexit.register
def _close_all() -> None:
    for model in list(_loaded.values()):
        try:
            model.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    _loaded.clear()
