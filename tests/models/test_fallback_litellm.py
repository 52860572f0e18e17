"""Model fallback through LiteLLM (MDL-FALLBACK-*): the errors come from a real OpenAI-compatible server on loopback
(``openai_server.py``: one model name per behaviour), reached by LiteLLM with ``api_base``; the fallback answers with
a native call of the agent's ``respond_to_user``.

``max_retries: 0`` turns off the OpenAI client's own retries (two by default, with backoff), so each test sees one
request per model unless it asks LiteLLM for retries.
"""

from __future__ import annotations

import pytest

from llamabot import AgentBot, AsyncAgentBot, SimpleBot
from llamabot.errors import ModelCallError
from llamabot.models.fallback import ModelFallbackError
from llamabot.models.litellm_model import LiteLLMModel, ensure_litellm
from llamabot.models.registry import LOCAL_MODELS, ensure_model_file, local_runtime_installed
from llamabot.models.scripted import ScriptedModel, tool_call
from tests.models import openai_server
from tests.models.openai_server import ANSWER, USAGE

litellm = ensure_litellm()
litellm.suppress_debug_info = True  # LiteLLM prints a help banner on stdout for every provider error
COST_IN, COST_OUT = 1e-6, 2e-6


@pytest.fixture(scope="module")
def server():
    litellm.register_model({"openai/answers": {"input_cost_per_token": COST_IN, "output_cost_per_token": COST_OUT,
                                               "litellm_provider": "openai", "mode": "chat"}})
    running = openai_server.start()
    yield running
    running.shutdown()


@pytest.fixture
def settings(server):
    server.hits.clear()
    return {"api_base": server.url, "api_key": "sk-test", "max_retries": 0}


def agent(primary: str, settings: dict, **options) -> AgentBot:
    return AgentBot(model=[f"openai/{primary}", "openai/answers"], model_settings=settings, **options)


def the_model_call(trace):
    [span] = trace.of_kind("model_call")
    return span


# -- MDL-FALLBACK-030: provider errors move on ------------------------------------------------------------------


@pytest.mark.parametrize(("primary", "status"), [
    ("rate-limited", 429), ("broken", 500), ("bad-gateway", 502), ("overloaded", 503), ("unauthorized", 401),
    ("forbidden", 403),
])
def test_mdl_fallback_030_an_agent_run_falls_back_on_a_provider_error_from_the_server(server, settings, primary,
                                                                                         status):
    answer, trace = agent(primary, settings).run_sync("q")
    assert answer == ANSWER
    assert server.hits == {primary: 1, "answers": 1}
    span = the_model_call(trace)
    assert span.attributes["answered_by"] == "openai/answers"
    [failed] = span.attributes["fallbacks"]
    assert failed.model == f"openai/{primary}" and failed.status_code == status
    assert f"{primary}: refused by the test server" in failed.error


def test_mdl_fallback_030_a_timeout_moves_on(server, settings):
    answer, trace = agent("slow", {**settings, "timeout": 1.5}).run_sync("q")
    assert answer == ANSWER and server.hits == {"slow": 1, "answers": 1}
    [failed] = the_model_call(trace).attributes["fallbacks"]
    assert failed.error.startswith("Timeout") and failed.status_code == 408


def test_mdl_fallback_030_a_refused_connection_moves_on_and_each_model_keeps_its_own_settings(server, settings):
    nobody = LiteLLMModel("openai/answers", api_base=openai_server.closed_port_url(), api_key="k", max_retries=0)
    there = LiteLLMModel("openai/answers", api_base=server.url, api_key="k", max_retries=0)
    answer, trace = AgentBot(model=[nobody, there]).run_sync("q")
    assert answer == ANSWER and server.hits == {"answers": 1}
    [failed] = the_model_call(trace).attributes["fallbacks"]
    assert "Connection error" in failed.error  # LiteLLM reports a refused connection as a 500


# -- MDL-FALLBACK-040: the request's own errors do not ---------------------------------------------------------


@pytest.mark.parametrize(("primary", "error"), [
    ("bad-request", "BadRequestError"), ("not-found", "NotFoundError"), ("unprocessable", "BadRequestError"),  # LiteLLM reports a 422 as a 400
])
def test_mdl_fallback_040_a_request_error_from_the_server_is_raised_and_the_fallback_never_asked(server, settings,
                                                                                                primary, error):
    with pytest.raises(ModelCallError, match=error) as info:
        agent(primary, settings)("q")
    assert type(info.value) is ModelCallError and type(info.value.__cause__).__name__ == error
    assert server.hits == {primary: 1}


# -- MDL-FALLBACK-050: every model failed -------------------------------------------------------------------------


def test_mdl_fallback_050_when_every_server_model_fails_the_error_lists_them(server, settings):
    bot = AgentBot(model=["openai/rate-limited", "openai/overloaded"], model_settings=settings)
    with pytest.raises(ModelFallbackError) as info:
        bot("q")
    assert [(a.model, a.status_code) for a in info.value.fallback.failed] == [
        ("openai/rate-limited", 429), ("openai/overloaded", 503)]
    assert server.hits == {"rate-limited": 1, "overloaded": 1}


# -- MDL-FALLBACK-060: streaming ---------------------------------------------------------------------------------


async def test_mdl_fallback_060_a_stream_falls_back_before_the_first_token(server, settings):
    bot = AsyncAgentBot(model=["openai/rate-limited", "openai/answers"], model_settings=settings)
    events = [event async for event in bot.astream("q")]
    answer = "".join(e.data["delta"] for e in events if e.kind == "token" and e.data["answer"])
    assert answer == ANSWER == events[-1].data["result"]
    assert server.hits == {"rate-limited": 1, "answers": 1}


async def test_mdl_fallback_060_a_stream_that_breaks_after_its_first_token_is_not_taken_back(server, settings):
    bot = AsyncAgentBot(model=["openai/breaks-mid-stream", "openai/answers"], model_settings=settings)
    events = []
    with pytest.raises(ModelCallError):
        async for event in bot.astream("q"):
            events.append(event)
    assert [e.data["delta"] for e in events if e.kind == "token"] == ["the "]
    assert events[-1].kind == "error" and server.hits == {"breaks-mid-stream": 1}


# -- MDL-FALLBACK-080: usage and cost ---------------------------------------------------------------------------


def test_mdl_fallback_080_usage_and_cost_are_the_answering_models_once(server, settings):
    _, trace = agent("rate-limited", settings).run_sync("q")
    usage = trace.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (1, USAGE["prompt_tokens"],
                                                                         USAGE["completion_tokens"])
    assert usage.cost == pytest.approx(USAGE["prompt_tokens"] * COST_IN + USAGE["completion_tokens"] * COST_OUT)
    assert the_model_call(trace).to_dict()["attributes"]["cost"] == pytest.approx(usage.cost)


# -- MDL-FALLBACK-090: async ------------------------------------------------------------------------------------


async def test_mdl_fallback_090_an_async_agent_run_falls_back(server, settings):
    answer, trace = await AsyncAgentBot(model=["openai/overloaded", "openai/answers"],
                                        model_settings=settings).arun_with_trace("q")
    assert answer == ANSWER and the_model_call(trace).attributes["answered_by"] == "openai/answers"
    assert server.hits == {"overloaded": 1, "answers": 1}


# -- MDL-FALLBACK-100: across kinds of model ------------------------------------------------------------------


def test_mdl_fallback_100_a_litellm_model_falls_back_to_a_scripted_one(server, settings):
    backup = ScriptedModel([tool_call("respond_to_user", response="scripted backup")], name="backup")
    answer, trace = AgentBot(model=["openai/rate-limited", backup], model_settings=settings).run_sync("q")
    assert answer == "scripted backup" and the_model_call(trace).attributes["answered_by"] == "backup"
    assert backup.requests[0].params["api_base"] == settings["api_base"]  # the bot's settings reach every model


@pytest.mark.local_model
def test_mdl_fallback_100_a_litellm_model_falls_back_to_the_embedded_model(server):
    if not local_runtime_installed():
        pytest.fail('llama-cpp-python is not installed: pip install -e ".[local,dev]"')
    ensure_model_file(LOCAL_MODELS["qwen2.5-coder-0.5b"].alias)
    primary = LiteLLMModel("openai/rate-limited", api_base=server.url, api_key="k", max_retries=0)
    bot = SimpleBot("Answer with one word.", model=[primary, "local/qwen2.5-coder-0.5b"],
                    model_settings={"max_tokens": 8})
    reply = bot("Say hello.")
    assert reply.content.strip()
    span = the_model_call(bot.last_trace)
    assert span.attributes["answered_by"] == "local/qwen2.5-coder-0.5b"
    assert span.attributes["fallbacks"][0].status_code == 429


# -- MDL-FALLBACK-110: retries of one model are LiteLLM's --------------------------------------------------------


def test_mdl_fallback_110_litellm_retries_a_model_before_the_chain_moves_on(server, settings):
    answer, _ = agent("rate-limited", {**settings, "num_retries": 2}).run_sync("q")
    assert answer == ANSWER
    assert server.hits["rate-limited"] > 1 and server.hits["answers"] == 1
