"""The embedded model's seam path without llama.cpp: settings from the environment, the sync and async drivers
of a generation, and the reply/error contract of ``LocalModel`` (the engine replaced by a scripted generation)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from llamabot.errors import ModelCallError, ModelFileError
from llamabot.models.local import model as local_model
from llamabot.models.local.engine import Generation, adrive, drive
from llamabot.models.local.model import LocalModel
from llamabot.models.local.runtime import LocalSettings, LocalSettingsError
from llamabot.models.reply import ModelRequest
from llamabot.models.resolve import get_model, model_family
from llamabot.models.seam import acall_model, call_model

REQUEST = ModelRequest(model="local/x", messages=[{"role": "user", "content": "hi"}])


def scripted_run(pieces, result=None, error=None, lock=None):
    """A generation like ``LocalEngine.run``: holds ``lock`` while it yields ``pieces``, then returns or raises."""
    with lock or threading.Lock():
        yield from pieces
        if error is not None:
            raise error
        return result or Generation("".join(pieces), [], 5, len(pieces), "stop")


def test_mdl_local_300_settings_come_from_the_environment(monkeypatch, tmp_path: Path):
    for name in (
        "LLAMABOT_LOCAL_THREADS",
        "LLAMABOT_LOCAL_BATCH",
        "LLAMABOT_LOCAL_N_CTX",
        "LLAMABOT_PREFIX_CACHE_BYTES",
    ):
        monkeypatch.delenv(name, raising=False)
    default = LocalSettings.from_env()
    assert default.n_ctx == 8192 and default.n_batch == 512 and default.n_threads >= 1
    monkeypatch.setenv("LLAMABOT_LOCAL_THREADS", "3")
    monkeypatch.setenv("LLAMABOT_LOCAL_BATCH", "256")
    monkeypatch.setenv("LLAMABOT_LOCAL_N_CTX", "4096")
    monkeypatch.setenv("LLAMABOT_PREFIX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LLAMABOT_PREFIX_CACHE_BYTES", "0")
    settings = LocalSettings.from_env()
    assert (settings.n_threads, settings.n_batch, settings.n_ctx) == (3, 256, 4096)
    assert settings.prefix_dir == tmp_path and settings.disk_bytes == 0
    assert "n_ctx=4096" in settings.context and "n_batch=256" in settings.context


@pytest.mark.parametrize("value", ["two", "0", "-1", "1.5"])
def test_mdl_local_300_a_bad_setting_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("LLAMABOT_LOCAL_THREADS", value)
    with pytest.raises(LocalSettingsError, match=r"\$LLAMABOT_LOCAL_THREADS=.*expected a whole number from 1 to"):
        LocalSettings.from_env()


def test_mdl_local_200_drive_hands_pieces_over_as_they_come_and_returns_the_generation():
    seen = []
    generation = drive(scripted_run(["a", "b", "c"]), seen.append)
    assert seen == ["a", "b", "c"] and generation.content == "abc"


def test_mdl_local_200_an_error_in_the_callback_closes_the_generation_and_releases_the_model():
    lock = threading.Lock()

    def fail(piece):
        raise KeyError("hook broke")

    with pytest.raises(KeyError, match="hook broke"):
        drive(scripted_run(["a", "b"], lock=lock), fail)
    assert not lock.locked()


def test_mdl_local_210_adrive_generates_in_a_worker_and_delivers_pieces_on_the_event_loop():
    async def scenario():
        loop_thread = threading.get_ident()
        seen = []

        def on_piece(piece):
            seen.append((piece, threading.get_ident() == loop_thread))

        def slow():
            for piece in ["x", "y"]:
                threading.Event().wait(0.05)  # a worker that blocks (llama.cpp does) must not stall the loop
                yield piece
            return Generation("xy", [], 1, 2, "stop")

        ticks = 0

        async def heartbeat():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        beat = asyncio.create_task(heartbeat())
        generation = await adrive(slow, on_piece)
        beat.cancel()
        return seen, generation, ticks

    seen, generation, ticks = asyncio.run(scenario())
    assert seen == [("x", True), ("y", True)] and generation.content == "xy"
    assert ticks >= 5


def test_mdl_local_210_adrive_reraises_the_generation_error_and_cancellation_releases_the_model():
    with pytest.raises(ValueError, match="bad"):
        asyncio.run(adrive(lambda: scripted_run(["a"], error=ValueError("bad")), lambda p: None))

    lock = threading.Lock()
    started = threading.Event()

    def endless():
        with lock:
            while True:
                started.set()
                threading.Event().wait(0.01)
                yield "."

    async def cancel_it():
        task = asyncio.create_task(adrive(endless, lambda p: None))
        await asyncio.to_thread(started.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    assert lock.acquire(timeout=5)  # the worker stopped at the next piece and let go of the model


def test_mdl_local_200_local_models_go_to_the_direct_path_other_strings_to_litellm():
    model = get_model("local/qwen2.5-coder-0.5b")
    assert isinstance(model, LocalModel) and model.name == "local/qwen2.5-coder-0.5b"
    assert model_family(model) == "local"
    assert type(get_model("gpt-4.1-mini")).__name__ == "LiteLLMModel"


@pytest.fixture
def scripted_engine(monkeypatch):
    """LocalModel with its engine replaced: each call takes the next scripted generation."""
    queue: list = []
    monkeypatch.setattr(local_model, "loaded_model", lambda alias: alias)

    class Engine:
        def __init__(self, loaded):
            pass

        def run(self, messages, params, stream):
            return queue.pop(0)

    monkeypatch.setattr(local_model, "LocalEngine", Engine)
    return queue


def test_mdl_local_220_replies_keep_the_seam_contract(scripted_engine):
    scripted_engine.append(
        scripted_run([], Generation(None, [("add", '{"a": 1}'), ("add", '{"a": 2}')], 9, 4, "tool_calls"))
    )
    scripted_engine.append(scripted_run(["4", "2"]))
    reply = call_model(LocalModel("local/qwen2.5-coder-0.5b"), REQUEST)
    assert [c.name for c in reply.tool_calls] == ["add", "add"] and reply.tool_calls[
        0
    ].id != reply.tool_calls[1].id
    assert reply.usage.prompt_tokens == 9 and reply.usage.completion_tokens == 4 and reply.usage.cost == 0.0
    assert (
        reply.model == "local/qwen2.5-coder-0.5b"
        and reply.finish_reason == "tool_calls"
        and reply.latency_s >= 0
    )
    pieces = []
    streamed = asyncio.run(acall_model(LocalModel("local/qwen2.5-coder-0.5b"), REQUEST, pieces.append))
    assert pieces == ["4", "2"] and streamed.content == "42"


def test_mdl_local_220_model_failures_are_model_call_errors_and_llamabot_errors_pass_through(scripted_engine):
    scripted_engine.append(scripted_run(["a"], error=RuntimeError("llama_decode returned -1")))
    with pytest.raises(
        ModelCallError, match=r"local/m: the model call failed: RuntimeError: llama_decode returned -1"
    ):
        call_model(LocalModel("local/m"), REQUEST, lambda piece: None)
    scripted_engine.append(scripted_run([], error=ModelFileError("local model file not found: /x.gguf")))
    with pytest.raises(ModelFileError, match="not found"):
        asyncio.run(acall_model(LocalModel("local/m"), REQUEST))


def test_mdl_local_220_an_error_of_the_callers_token_callback_stays_its_own(scripted_engine):
    scripted_engine.append(scripted_run(["a"]))

    def broken(piece):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        call_model(LocalModel("local/m"), REQUEST, broken)


def test_mdl_local_310_threads_default_to_the_usable_physical_cores():
    """MDL-LOCAL-310: llama.cpp's threads default to one per physical core among the CPUs this process may use
    (SMT siblings count once), capped by a container's CPU quota (rounded up); without sibling lists, half the
    logical cores; never fewer than one. This machine's own count is what the setting defaults to."""
    from llamabot.cores import count_cores, usable_cores
    from llamabot.settings import SETTINGS

    smt = {0: "0,4", 4: "0,4", 1: "1,5", 5: "1,5", 2: "2,6", 6: "2,6", 3: "3,7", 7: "3,7"}
    assert count_cores(range(8), smt, None, 8) == 4
    assert count_cores([0, 4, 1], smt, None, 8) == 2  # affinity: cores 0 and 1 only
    assert count_cores(range(2), {0: "0", 1: "1"}, None, 2) == 2  # no SMT: every CPU is a core
    assert count_cores(range(8), smt, "150000 100000", 8) == 2  # 1.5 CPUs of quota
    assert count_cores(range(8), smt, "max 100000", 8) == 4
    assert count_cores(range(8), smt, "50000 100000", 8) == 1
    assert count_cores(range(16), {}, None, 16) == 8  # no topology: half the logical cores
    assert count_cores([0], {}, "junk", 1) == 1
    assert SETTINGS["LLAMABOT_LOCAL_THREADS"].default is usable_cores and usable_cores() >= 1


def test_mdl_batch_100_adrive_cancellation_reaches_the_requests_its_generation_submitted():
    """What a generation registers with the running cancellation (the engine registers each request's
    ``cancel``) is called when the async caller is cancelled, while the waiting thread still blocks."""
    from llamabot.models.local.engine import _CANCEL

    cancelled = threading.Event()
    started = threading.Event()

    def blocking():
        _CANCEL.get().add(cancelled.set)  # type: ignore[union-attr]
        started.set()
        cancelled.wait(10)  # a request waiting for its scheduler: no pieces until then
        yield "late"
        return Generation("late", [], 1, 1, "stop")

    async def scenario():
        task = asyncio.create_task(adrive(blocking, lambda p: None))
        await asyncio.to_thread(started.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert cancelled.is_set()
