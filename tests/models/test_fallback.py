"""Model fallback (MDL-FALLBACK-*) on scripted models: ``model=[primary, fallback, ...]`` on every bot, which errors
move on to the next model, streaming, the trace, usage, and what a wrong list is told.

The provider errors are LiteLLM's own exception classes (what :class:`LiteLLMModel` raises as the ``__cause__`` of
its ``ModelCallError``), raised by scripted models; ``test_fallback_litellm.py`` has them come from a real server.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from llamabot import AgentBot, AsyncAgentBot, SimpleBot, StructuredBot, ToolBot
from llamabot.errors import ModelCallError, ScriptedModelExhausted
from llamabot.evals.game24.prompts import Game24Prompts
from llamabot.graph.codec import decode_state, encode_state
from llamabot.models.fallback import FallbackModel, ModelFallbackError, falls_back
from llamabot.models.litellm_model import LiteLLMModel, ensure_litellm
from llamabot.models.reply import FailedAttempt, Fallback, ModelReply, ModelRequest, Usage
from llamabot.models.resolve import get_model, model_family
from llamabot.models.scripted import ScriptedModel, json_reply, text, tool_call
from llamabot.models.seam import acall_model, call_model
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Trace, capture
from llamabot.reasoning.anot import ANoTBot
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN
from llamabot.reasoning.tot import ToTBot
from tests.reasoning.anot.helpers import ITEMS, three_phase_responder
from tests.reasoning.tot.helpers import oracle_model

litellm = ensure_litellm()
REQUEST = ModelRequest(model="chain", messages=[{"role": "user", "content": "hi"}])


def rate_limited(model: str = "primary") -> Exception:
    return litellm.RateLimitError("slow down", "openai", model)


def bad_request(model: str = "primary") -> Exception:
    return litellm.BadRequestError("malformed", model, "openai")


def failing(error_factory=rate_limited, name: str = "primary") -> ScriptedModel:
    """A model whose every call fails with a fresh ``error_factory()``."""
    return ScriptedModel(responder=lambda request: error_factory(), name=name)


# -- MDL-FALLBACK-010: model=[...] on every bot ----------------------------------------------------------------


def every_bot(model):
    class City(BaseModel):
        name: str

    return [
        ("AgentBot", AgentBot(model=model)), ("AsyncAgentBot", AsyncAgentBot(model=model)),
        ("AoTBot", AoTBot(model=model)), ("ToTBot", ToTBot(model=model)), ("ANoTBot", ANoTBot(model=model)),
        ("SimpleBot", SimpleBot("s", model=model)), ("StructuredBot", StructuredBot("s", City, model=model)),
        ("ToolBot", ToolBot("s", model=model)),
    ]


def test_mdl_fallback_010_every_bot_takes_a_list_of_models_as_one_fallback_model_named_after_the_first():
    first, second = ScriptedModel(name="first"), ScriptedModel(name="second")
    for name, bot in every_bot([first, second]):
        assert isinstance(bot.model, FallbackModel), name
        assert bot.model.models == (first, second) and bot.model.name == "first", name


def test_mdl_fallback_010_a_list_of_one_model_is_that_model_and_strings_are_resolved_as_model_strings():
    only = ScriptedModel()
    assert get_model([only]) is only
    chain = get_model(("gpt-4.1-mini", "local/qwen2.5-coder-0.5b", only))
    assert [type(m).__name__ for m in chain.models] == ["LiteLLMModel", "LocalModel", "ScriptedModel"]
    assert chain.name == "gpt-4.1-mini" and repr(chain).startswith("FallbackModel(['gpt-4.1-mini'")


def test_mdl_fallback_010_a_chain_among_the_models_adds_its_own_models():
    a, b, c = ScriptedModel(name="a"), ScriptedModel(name="b"), ScriptedModel(name="c")
    assert get_model([FallbackModel([a, b]), c]).models == (a, b, c)


def test_mdl_fallback_010_each_bot_runs_through_its_chain_when_the_first_model_is_rate_limited():
    class City(BaseModel):
        name: str

    def chain(backup):
        return [failing(), backup]

    assert SimpleBot("s", model=chain(ScriptedModel(["hello"])))("hi").content == "hello"
    assert StructuredBot("s", City, model=chain(ScriptedModel([json_reply({"name": "Oslo"})])))("x") == City(name="Oslo")
    assert ToolBot("s", model=chain(ScriptedModel([tool_call("respond_to_user", response="r")])),
                   tools=[])("hi").content is None
    assert AgentBot(model=chain(ScriptedModel([tool_call("respond_to_user", response="done")])))("q") == "done"
    assert AoTBot(expressions=False, model=chain(ScriptedModel([json_reply(EXAMPLE_PLAN)])))(
        "What is (15 + 7) * 3 - 10?").answer == 56
    tot = ToTBot(model=chain(oracle_model()), prompts=Game24Prompts(), min_depth=3, max_depth=3)("4 9 10 13")
    assert tot.termination.reason == "threshold"
    anot = ANoTBot(model=chain(ScriptedModel(responder=three_phase_responder())), debug=0)("kids and cozy", ITEMS)
    assert anot.ranking


# -- MDL-FALLBACK-020: a wrong list is refused when the bot is built -------------------------------------------


@pytest.mark.parametrize(("model", "error", "words"), [
    ([], ValueError, "names no model"),
    (["gpt-4.1-mini", ""], ValueError, "item 1 is an empty model name"),
    (["gpt-4.1-mini", ["claude"]], TypeError, "item 1 is a list: fallback chains do not nest"),
    ([("a", "b")], TypeError, "item 0 is a tuple: fallback chains do not nest"),
    (["gpt-4.1-mini", 42], TypeError, "item 1 is int, not a model"),
    (["gpt-4.1-mini", None], TypeError, "item 1 is NoneType, not a model"),
    ([{"model": "gpt-4.1-mini", "api_key": "k"}], TypeError, "settings of one model go on its object"),
])
def test_mdl_fallback_020_an_empty_nested_or_non_model_list_is_refused_at_construction(model, error, words):
    for bot in (AgentBot, AoTBot, ToTBot, ANoTBot):
        with pytest.raises(error, match=words):
            bot(model=model)
    with pytest.raises(error, match=words):
        SimpleBot("s", model=model)


def test_mdl_fallback_020_a_list_of_models_where_the_tools_or_the_prompt_go_says_to_pass_model():
    chain = [ScriptedModel(name="a"), ScriptedModel(name="b")]
    with pytest.raises(TypeError, match=r"list of models as tools; pass a fallback chain as AgentBot\(model="):
        AgentBot(chain)
    with pytest.raises(TypeError, match=r"list of models as system_prompt; .*SimpleBot\(model=\[primary"):
        SimpleBot(chain)
    with pytest.raises(TypeError, match="fallback_on must be a function"):
        FallbackModel(chain, fallback_on=429)


# -- MDL-FALLBACK-030 / 040: which errors move on to the next model ----------------------------------------------


@pytest.mark.parametrize("error", [
    lambda: litellm.RateLimitError("slow down", "openai", "m"),
    lambda: litellm.Timeout("too slow", "m", "openai"),
    lambda: litellm.APIConnectionError("refused", "openai", "m"),
    lambda: litellm.InternalServerError("boom", "openai", "m"),
    lambda: litellm.ServiceUnavailableError("overloaded", "openai", "m"),
    lambda: litellm.AuthenticationError("bad key", "openai", "m"),
    lambda: TimeoutError("read timed out"),
    lambda: ConnectionError("connection reset"),
], ids=["429", "timeout", "connection", "500", "503", "401", "TimeoutError", "ConnectionError"])
def test_mdl_fallback_030_provider_errors_move_on_to_the_next_model(error):
    backup = ScriptedModel(["from the backup"], name="backup")
    reply = FallbackModel([failing(error), backup]).complete(REQUEST)
    assert reply.content == "from the backup" and len(backup.requests) == 1
    wrapped = ModelCallError("primary: the model call failed")
    wrapped.__cause__ = error()
    assert falls_back(wrapped)  # as LiteLLMModel raises them: the provider's error as the cause


@pytest.mark.parametrize("error", [
    lambda: litellm.BadRequestError("malformed", "m", "openai"),
    lambda: litellm.ContextWindowExceededError("too long", "m", "openai"),
    lambda: litellm.ContentPolicyViolationError("refused", "m", "openai"),
    lambda: litellm.NotFoundError("no such model", "m", "openai"),
    lambda: ScriptedModelExhausted("nothing left"),
    lambda: ValueError("a bug"),
], ids=["400", "context-window", "content-policy", "404", "llamabot-error", "bug"])
def test_mdl_fallback_040_errors_of_the_request_itself_reach_the_caller_unchanged(error):
    primary = failing(error)
    backup = ScriptedModel(["never"], name="backup")
    with pytest.raises(Exception) as info:
        FallbackModel([primary, backup]).complete(REQUEST)
    assert type(info.value) is type(error()) and backup.requests == []


def test_mdl_fallback_040_a_request_error_after_a_fallback_keeps_its_type_and_names_what_failed_before():
    chain = FallbackModel([failing(name="a"), failing(bad_request, name="b"), ScriptedModel(["never"], name="c")])
    with capture() as trace, pytest.raises(litellm.BadRequestError) as info:
        call_model(chain, REQUEST)
    assert "the fallback chain tried: a (RateLimitError" in "\n".join(info.value.__notes__)
    [span] = trace.of_kind("model_call")
    assert [a.model for a in span.attributes["fallbacks"]] == ["a"] and "answered_by" not in span.attributes
    assert span.error.startswith("BadRequestError")


def test_mdl_fallback_040_fallback_on_chooses_the_errors_that_move_on():
    only_timeouts = FallbackModel([failing(), ScriptedModel(["never"])], fallback_on=lambda e: isinstance(e, TimeoutError))
    with pytest.raises(litellm.RateLimitError):
        only_timeouts.complete(REQUEST)


# -- MDL-FALLBACK-050: every model failed ---------------------------------------------------------------------


def test_mdl_fallback_050_when_every_model_fails_the_error_names_each_and_why():
    chain = FallbackModel([failing(name="a"), failing(lambda: TimeoutError("read timed out"), name="b")])
    with capture() as trace, pytest.raises(ModelFallbackError) as info:
        call_model(chain, REQUEST)
    error = info.value
    assert isinstance(error, ModelCallError) and isinstance(error.__cause__, TimeoutError)
    assert str(error) == ("every model of the fallback chain failed: a: RateLimitError: litellm.RateLimitError: "
                          "slow down; b: TimeoutError: read timed out")
    assert error.fallback == Fallback(None, (
        FailedAttempt("a", "RateLimitError: litellm.RateLimitError: slow down", 429),
        FailedAttempt("b", "TimeoutError: read timed out", None)))
    [span] = trace.of_kind("model_call")
    assert span.attributes["fallbacks"] == error.fallback.failed and span.error.startswith("ModelFallbackError")
    assert trace.usage.requests == 0 and trace.usage.input_tokens == 0


# -- MDL-FALLBACK-060: streaming -------------------------------------------------------------------------------


class BreaksAfterFirstWord(ScriptedModel):
    """Streams the first word of its reply, then fails as a dropped connection would."""

    def complete(self, request, on_token=None):
        if on_token is not None:
            on_token("Hello ")
        raise ConnectionError("the stream broke")

    async def acomplete(self, request, on_token=None):
        return self.complete(request, on_token)


def test_mdl_fallback_060_streaming_falls_back_while_no_piece_reached_the_caller():
    pieces: list[str] = []
    reply = FallbackModel([failing(), ScriptedModel(["streamed from the backup"])]).complete(REQUEST, pieces.append)
    assert "".join(pieces) == "streamed from the backup" == reply.content


def test_mdl_fallback_060_after_the_first_piece_the_error_is_raised_and_the_next_model_never_asked():
    backup = ScriptedModel(["never"])
    pieces: list[str] = []
    with pytest.raises(ConnectionError, match="the stream broke"):
        FallbackModel([BreaksAfterFirstWord(), backup]).complete(REQUEST, pieces.append)
    assert pieces == ["Hello "] and backup.requests == []
    # the same error before any piece reached the caller (no streaming) moves on
    assert FallbackModel([BreaksAfterFirstWord(), backup]).complete(REQUEST).content == "never"


def test_mdl_fallback_060_a_callers_on_token_error_is_its_own_and_not_a_reason_to_fall_back():
    class Refuses(Exception):
        pass

    def on_token(piece):
        raise Refuses(piece)

    backup = ScriptedModel(["never"])
    with pytest.raises(Refuses):
        FallbackModel([ScriptedModel(["first words"]), backup]).complete(REQUEST, on_token)
    assert backup.requests == []


async def test_mdl_fallback_060_an_agent_stream_falls_back_before_its_first_token():
    bot = AsyncAgentBot(model=[failing(), ScriptedModel([tool_call("respond_to_user", response="streamed answer")])])
    events = [event async for event in bot.astream("q")]
    answer = "".join(e.data["delta"] for e in events if e.kind == "token" and e.data["answer"])
    assert answer == "streamed answer" == events[-1].data["result"]


# -- MDL-FALLBACK-070: the trace and the hooks see it -----------------------------------------------------------


class ModelCalls(RunHooks):
    def __init__(self):
        self.ended: list[dict] = []

    def on_model_call_end(self, span, state):
        self.ended.append(dict(span.attributes))


def test_mdl_fallback_070_the_model_call_span_names_who_answered_and_who_failed_why_and_hooks_see_it():
    hook = ModelCalls()
    bot = AgentBot(model=[failing(name="primary"), ScriptedModel(
        [tool_call("respond_to_user", response="ok")], name="backup")], hooks=[hook])
    answer, trace = bot.run_sync("q")
    assert answer == "ok"
    [span] = trace.of_kind("model_call")
    assert span.attributes["model"] == "primary" and span.attributes["answered_by"] == "backup"
    assert span.attributes["fallbacks"] == (FailedAttempt("primary", "RateLimitError: litellm.RateLimitError: slow down", 429),)
    assert hook.ended[0]["answered_by"] == "backup" and hook.ended[0]["fallbacks"] == span.attributes["fallbacks"]
    exported = Trace.from_dict(json.loads(trace.to_json()))
    [saved] = exported.of_kind("model_call")
    assert saved.attributes["answered_by"] == "backup"
    assert saved.attributes["fallbacks"] == [{"model": "primary", "error": "RateLimitError: litellm.RateLimitError: "
                                              "slow down", "status_code": 429}]
    assert saved.attributes["reply"]["fallback"]["model"] == "backup"


def test_mdl_fallback_070_a_call_the_first_model_answers_adds_nothing_to_the_span():
    with capture() as trace:
        reply = call_model(FallbackModel([ScriptedModel(["first"]), ScriptedModel(["never"])]), REQUEST)
    [span] = trace.of_kind("model_call")
    assert reply.fallback is None and not {"answered_by", "fallbacks"} & span.attributes.keys()


# -- MDL-FALLBACK-080: usage and cost ---------------------------------------------------------------------------


def test_mdl_fallback_080_usage_and_cost_are_the_answering_models_counted_once_per_call():
    def priced(content: str) -> ModelReply:
        return ModelReply(content, usage=Usage(10, 5, 0.25))

    bot = SimpleBot("s", model=[failing(), ScriptedModel([priced("one"), priced("two")])])
    for _ in range(2):
        bot("hi")
    usage = bot.last_trace.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens, usage.cost) == (1, 10, 5, 0.25)
    with capture() as trace:
        call_model(FallbackModel([failing(), failing(), ScriptedModel([priced("x")])]), REQUEST)
        call_model(FallbackModel([ScriptedModel([priced("y")])]), REQUEST)
    assert (trace.usage.requests, trace.usage.input_tokens, trace.usage.cost) == (2, 20, 0.5)


# -- MDL-FALLBACK-090: sync and async the same ------------------------------------------------------------------


def test_mdl_fallback_090_sync_and_async_walk_the_chain_the_same_way():
    def chain():
        return FallbackModel([failing(name="a"), failing(lambda: TimeoutError("t"), name="b"),
                              ScriptedModel(["c answered"], name="c")])

    sync = call_model(chain(), REQUEST)
    asynchronous = asyncio.run(acall_model(chain(), REQUEST))
    assert sync.content == asynchronous.content == "c answered"
    assert sync.fallback == asynchronous.fallback == Fallback("c", (
        FailedAttempt("a", "RateLimitError: litellm.RateLimitError: slow down", 429),
        FailedAttempt("b", "TimeoutError: t", None)))


async def test_mdl_fallback_090_an_async_agent_run_falls_back_and_a_cancelled_call_is_not_a_reason_to():
    bot = AsyncAgentBot(model=[failing(), ScriptedModel([tool_call("respond_to_user", response="async ok")])])
    assert await bot.arun("q") == "async ok"
    backup = ScriptedModel(["never"])
    slow = ScriptedModel([text("late")], latency_s=5)
    task = asyncio.ensure_future(FallbackModel([slow, backup]).acomplete(REQUEST))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert backup.requests == []


# -- MDL-FALLBACK-120: the record survives the reply's round trips --------------------------------------------


def test_mdl_fallback_120_the_fallback_record_round_trips_through_the_reply_dict_and_the_state_codec():
    reply = FallbackModel([failing(), ScriptedModel(["ok"], name="backup")]).complete(REQUEST)
    assert ModelReply.from_dict(json.loads(json.dumps(reply.to_dict()))) == reply
    assert decode_state(json.loads(json.dumps(encode_state({"reply": reply})))) == {"reply": reply}
    assert "fallback" not in ScriptedModel(["plain"]).complete(REQUEST).to_dict()
    replayed = ScriptedModel.replay(Trace.from_dict(json.loads(json.dumps({"trace_id": "t", "spans": [
        {"span_id": 0, "parent_id": None, "name": "model_call", "kind": "model_call", "start": 0, "end": 1,
         "attributes": {"reply": reply.to_dict()}, "error": None, "category": "model_call"}]}))))
    assert replayed.complete(REQUEST).content == "ok"


def durable_agent() -> AgentBot:
    return AgentBot(model=[failing(), ScriptedModel(
        responder=lambda request: tool_call("respond_to_user", response="durable ok"), name="backup")])


def test_mdl_fallback_120_a_durable_run_records_a_chain_call_as_one_step_with_its_record(tmp_path):
    from llamabot.durable import Durable, show_run, shutdown

    try:
        agent = Durable(durable_agent, db=f"sqlite:///{tmp_path / 'runs.sqlite'}")
        assert agent.run("q", run_id="fallback-1") == "durable ok"
        assert [name for _, name in show_run("fallback-1", agent.db).steps] == ["model:primary",
                                                                                 "tool:respond_to_user"]
        assert agent.run("q", run_id="fallback-1") == "durable ok"  # read back from its record
    finally:
        shutdown()


# -- MDL-FALLBACK-130: provider quirks follow the first model ---------------------------------------------------


def test_mdl_fallback_130_a_chain_has_its_first_models_family():
    assert model_family(get_model(["ollama_chat/qwen2.5", "gpt-4.1-mini"])) == "ollama"
    assert model_family(get_model(["gpt-4.1-mini", ScriptedModel()])) == "remote"
    assert model_family(get_model([ScriptedModel(), LiteLLMModel("gpt-4.1-mini")])) == "scripted"
    assert ToolBot("s", model=["ollama_chat/qwen2.5", "gpt-4.1-mini"]).tool_choice == "auto"
