"""Prompt-prefix caches of the embedded model, without the model: keys, byte bounds, LRU order, atomic writes and
what happens to a corrupt or mismatched state file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from llamabot.models.local.prefix_cache import (
    MAGIC,
    DiskPrefixCache,
    MemoryPrefixCache,
    PrefixKey,
    PrefixState,
    common_prefix_length,
)


def key(
    tokens=(1, 2, 3), model_id="sha256:abc", runtime="llama_cpp=0.3.36", context="n_ctx=8192"
) -> PrefixKey:
    return PrefixKey(model_id, runtime, context, tuple(tokens))


def state(tokens=(1, 2, 3), size=100) -> PrefixState:
    return PrefixState(tuple(tokens), bytes(range(256)) * (size // 256) + bytes(size % 256))


def test_mdl_prefix_010_the_key_changes_with_model_runtime_context_and_every_token():
    base = key()
    variants = [
        key(model_id="sha256:def"),
        key(runtime="llama_cpp=0.3.37"),
        key(context="n_ctx=4096"),
        key(tokens=(1, 2, 4)),
        key(tokens=(1, 2, 3, 4)),
        key(tokens=(1, 2)),
    ]
    assert len({base.digest, *(v.digest for v in variants)}) == 1 + len(variants)
    assert key().digest == base.digest  # stable: the same inputs name the same file in every process


def test_mdl_prefix_020_a_saved_state_reads_back_under_its_key_and_leaves_no_temporary_file(tmp_path: Path):
    cache = DiskPrefixCache(tmp_path / "prefixes", max_bytes=10_000)
    saved = state(size=1000)
    path = cache.put(key(), saved)
    assert path is not None and path.exists() and path.read_bytes().startswith(MAGIC)
    assert cache.get(key()) == saved
    assert [p.name for p in (tmp_path / "prefixes").iterdir()] == [path.name]  # no .part left behind


def test_mdl_prefix_030_the_directory_stays_within_its_byte_budget_dropping_the_least_recently_used(
    tmp_path: Path,
):
    cache = DiskPrefixCache(tmp_path, max_bytes=3_000)
    keys = [key(tokens=(i, i + 1)) for i in range(3)]
    for i, k in enumerate(keys[:2]):
        cache.put(k, state(k.tokens, size=1000))
        os.utime(cache.path(k), (time.time() - 100 + i, time.time() - 100 + i))
    assert cache.get(keys[0]) is not None  # a hit marks it as recently used: keys[1] is now the oldest
    cache.put(keys[2], state(keys[2].tokens, size=1000))
    assert cache.nbytes() <= 3_000
    assert cache.get(keys[1]) is None
    assert cache.get(keys[0]) is not None and cache.get(keys[2]) is not None


def test_mdl_prefix_030_a_state_larger_than_the_whole_budget_is_not_written(tmp_path: Path):
    cache = DiskPrefixCache(tmp_path, max_bytes=500)
    assert cache.put(key(), state(size=1000)) is None
    assert cache.entries() == []


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda raw: raw[: len(raw) // 2], id="truncated"),
        pytest.param(lambda raw: raw[:-1] + bytes([raw[-1] ^ 0xFF]), id="data-flipped"),
        pytest.param(lambda raw: b"not a state file" + raw, id="bad-magic"),
        pytest.param(lambda raw: MAGIC + b"{broken json\n" + raw[-10:], id="bad-header"),
        pytest.param(lambda raw: b"", id="empty"),
    ],
)
def test_mdl_prefix_040_a_corrupt_state_file_is_ignored_deleted_and_rebuilt(tmp_path: Path, damage):
    cache = DiskPrefixCache(tmp_path, max_bytes=10_000)
    path = cache.put(key(), state())
    path.write_bytes(damage(path.read_bytes()))
    assert cache.get(key()) is None
    assert not path.exists()
    cache.put(key(), state())  # rebuilt by the next evaluation
    assert cache.get(key()) == state()


def test_mdl_prefix_040_a_state_written_for_another_key_is_never_trusted(tmp_path: Path):
    cache = DiskPrefixCache(tmp_path, max_bytes=10_000)
    other = key(runtime="llama_cpp=0.2.0")
    cache.put(other, state())
    cache.path(other).rename(cache.path(key()))  # the right name, the wrong content
    assert cache.get(key()) is None and not cache.path(key()).exists()


def test_mdl_prefix_050_memory_cache_finds_the_longest_cached_prefix_of_a_prompt():
    memory = MemoryPrefixCache(max_bytes=1 << 20)
    memory.put(state((1, 2)))
    memory.put(state((1, 2, 3, 4)))
    memory.put(state((9, 9, 9)))
    assert memory.longest([1, 2, 3, 4, 5]).tokens == (1, 2, 3, 4)
    assert memory.longest([1, 2, 3, 7]).tokens == (1, 2)
    assert memory.longest([1, 2, 3, 4]).tokens == (1, 2)  # a prompt's own state is not a prefix to restore
    assert memory.longest([1, 2, 3, 4, 5], shorter_than=4).tokens == (1, 2)
    assert memory.longest([5, 6, 7]) is None


def test_mdl_prefix_050_memory_cache_is_bounded_in_bytes_and_evicts_the_least_recently_used():
    one = state((1,), size=400).nbytes
    memory = MemoryPrefixCache(max_bytes=3 * one)
    for tokens in [(1,), (2,), (3,)]:
        memory.put(state(tokens, size=400))
    assert memory.longest([1, 0]) is not None  # (1,) is now the most recently used
    memory.put(state((4,), size=400))
    assert len(memory) == 3 and memory.nbytes <= 3 * one
    assert memory.longest([2, 0]) is None
    assert all(memory.longest([t, 0]) is not None for t in (1, 3, 4))
    memory.put(state((5,), size=10 * 400))  # larger than the whole budget: not kept, nothing evicted
    assert len(memory) == 3 and memory.longest([5, 0]) is None


def test_mdl_prefix_050_common_prefix_length():
    assert common_prefix_length([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix_length([], [1]) == 0
    assert common_prefix_length([1, 2], [1, 2, 3]) == 2
