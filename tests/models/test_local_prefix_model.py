"""The embedded model's speed features on the real 0.5B model (llama.cpp in-process): the seam's direct streaming
path, the persistent prompt-prefix cache and the in-process multi-prefix cache. Few, short generations."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap

import pytest

from llamabot.models.local.engine import LocalEngine, drive
from llamabot.models.local.prefix_cache import DiskPrefixCache, MemoryPrefixCache, PrefixState
from llamabot.models.local.runtime import loaded_model
from llamabot.models.reply import ModelRequest
from llamabot.models.resolve import get_model
from llamabot.models.seam import acall_model

pytestmark = pytest.mark.local_model

ALIAS = "qwen2.5-coder-0.5b"
SYSTEM = "You are a terse assistant. Answer in one short sentence. " * 6


@pytest.fixture(scope="module")
def loaded():
    """The 0.5B model, loaded once (fails with the install hint when the local extra is missing)."""
    from llamabot.models.registry import local_runtime_installed

    if not local_runtime_installed():
        pytest.fail('llama-cpp-python is not installed: pip install -e ".[local,dev]"')
    return loaded_model(ALIAS)


@pytest.fixture
def caches(loaded, tmp_path, monkeypatch):
    """Fresh prefix caches (a temporary directory, an empty memory cache) and an empty context."""
    disk = DiskPrefixCache(tmp_path / "prefixes", max_bytes=1 << 30)
    monkeypatch.setattr(loaded, "disk", disk)
    monkeypatch.setattr(loaded, "memory", MemoryPrefixCache(1 << 30))
    loaded.scheduler.forget()
    return disk


def ask(loaded, system: str, question: str) -> tuple[str, str]:
    """One short greedy generation; returns (where its prefix came from, the text)."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    generation = drive(LocalEngine(loaded).run(messages, {"max_tokens": 12}))
    return generation.prefix, generation.content


def test_mdl_prefix_060_a_saved_prefix_is_restored_in_a_fresh_context_with_the_same_answer(loaded, caches):
    first, text = ask(loaded, SYSTEM, "What is the capital of France?")
    assert first == "evaluated" and len(caches.entries()) == 1
    loaded.memory = None  # as in a new process: only the disk cache knows the prefix
    loaded.scheduler.forget()
    again, same = ask(loaded, SYSTEM, "What is the capital of France?")
    assert again == "disk" and same == text


def test_mdl_prefix_060_a_corrupt_saved_prefix_is_rebuilt_not_trusted(loaded, caches):
    _, text = ask(loaded, SYSTEM, "Name a colour.")
    [(path, _, _)] = caches.entries()
    path.write_bytes(path.read_bytes()[:-100])
    loaded.memory = None
    loaded.scheduler.forget()
    source, same = ask(loaded, SYSTEM, "Name a colour.")
    assert source == "evaluated" and same == text
    assert [entry[0] for entry in caches.entries()] == [path]
    loaded.scheduler.forget()
    assert ask(loaded, SYSTEM, "Name a colour.") == ("disk", text)  # the rebuilt file is whole again


def test_mdl_prefix_060_a_well_formed_state_that_llama_cpp_refuses_is_re_evaluated(loaded, caches):
    _, text = ask(loaded, SYSTEM, "Name an animal.")
    engine = LocalEngine(loaded)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Name an animal."}]
    tokens = engine._tokens(engine._prompt(messages, None)[0])
    prefix = tuple(tokens[: engine.fixed_prefix(messages, None, tokens)])
    caches.put(
        engine._key(prefix), PrefixState(prefix, b"\x00" * 4096)
    )  # right key and checksum, unusable data
    loaded.memory = None
    loaded.scheduler.forget()
    assert ask(loaded, SYSTEM, "Name an animal.") == ("evaluated", text)


def test_mdl_prefix_070_alternating_prompt_families_keep_their_own_prefixes(loaded, caches, monkeypatch):
    monkeypatch.setattr(loaded, "disk", None)  # memory only
    ask(loaded, SYSTEM, "Name a fruit.")
    ask(loaded, "You grade answers from 0 to 10. " * 8, "Grade: Paris is in France.")
    source, _ = ask(loaded, SYSTEM, "Name a fruit and a vegetable.")
    assert source == "memory"


def test_mdl_local_230_streaming_through_the_seam_never_imports_litellm(loaded, tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        from llamabot import SimpleBot
        pieces = []
        bot = SimpleBot("Answer with digits only.", model_name="local/{ALIAS}", stream_target=pieces.append,
                        max_tokens=12)
        reply = bot("Count from 1 to 5, separated by commas.")
        assert len(pieces) > 1 and "".join(pieces) == reply.content, (pieces, reply.content)
        assert reply.usage.prompt_tokens > 0 and 0 < reply.usage.completion_tokens <= 12
        print("litellm imported:", "litellm" in sys.modules)
        """
    )
    environment = {**os.environ, "LLAMABOT_PREFIX_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=environment
    )
    assert done.returncode == 0, done.stderr
    assert "litellm imported: False" in done.stdout


def test_mdl_local_240_async_streaming_delivers_tokens_on_the_loop(loaded, caches):
    model = get_model(f"local/{ALIAS}")
    request = ModelRequest(
        model=model.name,
        messages=[{"role": "user", "content": "Count from 1 to 5."}],
        params={"max_tokens": 12},
    )

    async def scenario():
        pieces: list[str] = []
        reply = await acall_model(model, request, pieces.append)
        return pieces, reply

    pieces, reply = asyncio.run(scenario())
    assert len(pieces) > 1 and "".join(pieces) == reply.content
