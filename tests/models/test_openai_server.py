"""Bots through a real OpenAI-compatible HTTP server (MDL-OAI-*): llama-cpp-python's own server
(``tests/fixtures/oai/serve.py``) serving the embedded 0.5B model on a loopback port in a subprocess, reached by
LiteLLM's ``openai/`` provider with ``api_base``, exactly as a user reaches vLLM, Ollama or LM Studio: native tool
calls, streaming, usage, 20 concurrent runs, an AoT plan, durable runs, and a server that dies mid-run.

The server runs one request at a time on one llama.cpp thread; the questions are trivially easy (see
``tests/fixtures/oai/bots.py``). When a test fails, the server's log lines of that test are printed after it. The
order saves prompt evaluations (the server keeps the KV cache of its last prompt): the agent's tests run together,
and the tests that kill the server come last.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import time

import pytest

from llamabot import AsyncAgentBot
from llamabot.errors import ModelCallError
from llamabot.models.litellm_model import model_and_server
from llamabot.models.registry import LOCAL_MODELS, ensure_model_file, local_runtime_installed
from llamabot.reasoning.aot import AoTBot
from tests.durable.conftest import PYTHON, subprocess_env
from tests.fixtures.oai.bots import MODEL, QUESTION, WORD, agent, settings
from tests.fixtures.oai.server import LlamaServer

local = pytest.mark.local_model
SMALL = LOCAL_MODELS["qwen2.5-coder-0.5b"]
SERVER_EXTRA = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The server, started once per session (a few seconds: the model file is mmapped) and stopped after."""
    missing = [name for name in SERVER_EXTRA if importlib.util.find_spec(name) is None]
    if not local_runtime_installed() or missing:
        pytest.fail(f"llama-cpp-python with its server extra is not installed (missing: {missing or 'llama_cpp'}): "
                    'pip install -e ".[local,dev]"')
    running = LlamaServer(ensure_model_file(SMALL.alias), tmp_path_factory.mktemp("oai") / "server.log")
    running.start()
    yield running
    running.stop()


@pytest.fixture
def live(server):
    """The server, running (started again if a test killed it); prints the log lines written during the test
    (pytest shows them when the test fails)."""
    if not server.running:
        server.start()
    seen = len(server.log_tail(chars=1 << 30))
    yield server
    print(f"--- llama.cpp server log ({server.log}) during this test ---\n{server.log_tail(chars=1 << 30)[seen:]}")


@pytest.fixture(scope="module")
def agent_run(server):
    """One agent run, read by the tests of its tool calls and of its usage."""
    if not server.running:
        server.start()
    return agent(server.url).run_sync(QUESTION)


def replies(trace):
    return [span.attributes["reply"] for span in trace.of_kind("model_call")]


# -- MDL-OAI-010: native tool calls over HTTP ----------------------------------------------------------------


@local
def test_mdl_oai_010_an_agent_answers_with_native_tool_calls_over_http(live, agent_run):
    answer, trace = agent_run
    assert WORD in answer
    assert [span.name for span in trace.of_kind("tool_call")] == ["secret_word", "respond_to_user"]
    assert [([call.name for call in reply.tool_calls], reply.finish_reason) for reply in replies(trace)] == [
        (["secret_word"], "tool_calls"), (["respond_to_user"], "tool_calls")]  # calls, not text to parse


# -- MDL-OAI-020: usage ---------------------------------------------------------------------------------------


@local
def test_mdl_oai_020_usage_is_the_servers_count_and_the_run_total_adds_up(live, agent_run):
    _, trace = agent_run
    usage, counted = trace.usage, [reply.usage for reply in replies(trace)]
    assert all(u.prompt_tokens > 100 and u.completion_tokens > 0 for u in counted)  # the prompt holds the tools
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (
        2, sum(u.prompt_tokens for u in counted), sum(u.completion_tokens for u in counted))


# -- MDL-OAI-030: streaming -----------------------------------------------------------------------------------


@local
async def test_mdl_oai_030_astream_yields_the_answer_token_by_token_as_the_server_streams_it(live):
    events = [event async for event in agent(live.url).astream(QUESTION)]
    pieces = [e.data["delta"] for e in events if e.kind == "token" and e.data["answer"]]
    answer = events[-1].data["result"]
    assert WORD in answer
    assert len(pieces) > 1 and "".join(pieces) == answer  # written piece by piece, not delivered whole
    assert events[-1].data["usage"]["input_tokens"] > 0 and events[-1].data["usage"]["output_tokens"] > 0


# -- MDL-OAI-040: concurrent async runs -----------------------------------------------------------------------


@local
async def test_mdl_oai_040_twenty_concurrent_async_runs_each_get_their_own_answer(live):
    bot = AsyncAgentBot(model=MODEL, model_settings=settings(live.url, max_tokens=24), max_iterations=1)
    before = live.chat_requests()
    numbers = range(101, 121)
    answers = await asyncio.gather(*(bot.arun(f"Call respond_to_user with the number {n}.") for n in numbers))
    assert [str(n) in str(answer) for n, answer in zip(numbers, answers, strict=True)] == [True] * 20, answers
    assert live.chat_requests() - before >= 20


# -- MDL-OAI-050: AoT -----------------------------------------------------------------------------------------


@local
def test_mdl_oai_050_an_aot_plan_comes_back_as_json_schema_output_and_runs(live):
    result = AoTBot(model=MODEL, model_settings=settings(live.url, max_tokens=256))("What is 17 + 25?")
    assert result.plan.final is not None and all(r.status == "ok" for r in result.record.atoms.values())
    assert result.answer == 42


# -- MDL-OAI-060: a durable run survives its server ------------------------------------------------------


@local
def test_mdl_oai_060_a_durable_run_loses_nothing_when_the_server_dies_and_completes_once_it_is_back(
        live, tmp_path):
    """A durable run through the server (SQLite): the server is killed after the run's tool call; the run waits
    in its model call (the client retries) and its process is killed too; the server restarts, the process
    restarts, and the run finishes from its last completed step: the tool ran once, and only the model call cut
    off is sent again."""
    from llamabot.durable import show_run

    effects, db = tmp_path / "effects.txt", f"sqlite:///{tmp_path / 'runs.sqlite'}"
    env = subprocess_env(OAI_TEST_BASE=live.url, OAI_TEST_EFFECTS=str(effects), OAI_TEST_RETRIES="20")
    command = [PYTHON, "-m", "tests.durable.run_agent", db, "oai-crash", QUESTION, "tests.fixtures.oai.bots:make_agent"]
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (effects.exists() and effects.read_text()) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    live.kill()  # the tool has run: the next decision finds no server
    sent = live.chat_requests()
    time.sleep(1.0)  # the run is retrying its model call
    first.kill()
    _, err = first.communicate()
    assert effects.read_text() == "secret_word\n", err
    assert show_run("oai-crash", db).status == "PENDING"

    live.start()
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert second.returncode == 0, second.stderr
    assert WORD in json.loads(second.stdout.strip().splitlines()[-1])["result"]
    assert effects.read_text() == "secret_word\n"  # the completed tool call was not run again
    assert live.chat_requests() - sent == 1  # the completed first decision was not sent again
    assert show_run("oai-crash", db).status == "SUCCESS"


# -- MDL-OAI-070: the server dies -----------------------------------------------------------------------------


@local
async def test_mdl_oai_070_a_server_killed_mid_stream_is_a_model_call_error_naming_the_server(live):
    events = []
    with pytest.raises(ModelCallError) as info:
        async for event in agent(live.url, max_retries=0).astream(QUESTION):
            events.append(event)
            if event.kind == "token":
                live.kill()  # mid-response: the server has begun streaming
    assert str(info.value).startswith(f"{MODEL} ({live.url}): the model call failed: ")
    assert "Connection error" in str(info.value) and events[-1].kind == "error"


@local
def test_mdl_oai_070_a_dead_server_is_a_model_call_error_naming_the_server(server):
    server.kill()  # dead already when the test before it passed
    with pytest.raises(ModelCallError, match="Connection error") as info:
        agent(server.url, max_retries=0).run_sync(QUESTION)  # no retries: fail at once
    assert str(info.value).startswith(f"{MODEL} ({server.url}): the model call failed: ")


def test_mdl_oai_070_the_server_named_in_an_error_leaves_out_credentials():
    settings = {"api_base": "https://user:secret@llm.example.com:8443/v1?key=secret#x"}
    assert model_and_server("openai/m", settings) == "openai/m (https://llm.example.com:8443/v1)"
    assert model_and_server("openai/m", {}) == "openai/m"
