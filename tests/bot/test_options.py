"""Strict, uniform constructors (API-OPT-*): every bot takes the shared options by the same keywords, an unknown
keyword is a TypeError naming it (and the closest valid one), and only ``model_settings`` reaches the provider."""

from __future__ import annotations

import string
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from llamabot import AgentBot, ScriptedModel, SimpleBot, StructuredBot, ToolBot, UsageLimits
from llamabot.models.scripted import text, tool_call
from llamabot.reasoning.anot import ANoTBot
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.tot import ToTBot


class City(BaseModel):
    name: str


def make(cls, **kwargs):
    """Each bot with what it needs besides the options under test."""
    if cls is SimpleBot or cls is ToolBot:
        return cls("prompt", **kwargs)
    if cls is StructuredBot:
        return cls("prompt", City, **kwargs)
    return cls(**kwargs)


BOTS = [SimpleBot, StructuredBot, ToolBot, AgentBot, AoTBot, ToTBot, ANoTBot]
SHARED = ("model", "model_settings", "hooks", "usage_limits")


@pytest.mark.parametrize("cls", BOTS, ids=lambda c: c.__name__)
def test_api_opt_010_every_bot_takes_the_shared_options_by_keyword(cls):
    bot = make(cls, model=ScriptedModel([]), model_settings={"temperature": 0.2}, hooks=(),
               usage_limits=UsageLimits(max_requests=3))
    assert bot.model_settings == {"temperature": 0.2}
    assert bot.usage_limits == UsageLimits(max_requests=3)


@pytest.mark.parametrize("cls", BOTS, ids=lambda c: c.__name__)
def test_api_opt_020_an_unknown_keyword_is_a_type_error_naming_it_and_the_closest_option(cls):
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'hook'; did you mean hooks\?"):
        make(cls, model=ScriptedModel([]), hook=[])


def test_api_opt_025_the_misconfigurations_of_the_report_are_errors():
    with pytest.raises(TypeError, match="did you mean max_iterations"):
        AgentBot(model=ScriptedModel([]), max_iteration=3)
    with pytest.raises(TypeError, match="model"):
        AgentBot([], ScriptedModel([]))  # the model where the system prompt used to be
    with pytest.raises(TypeError, match="model"):
        AoTBot(ScriptedModel([]))  # the model where the tools go
    with pytest.raises(TypeError, match="branching_factor"):
        ToTBot(model=ScriptedModel([]), branch_factor=2)


@pytest.mark.parametrize("cls", BOTS, ids=lambda c: c.__name__)
def test_api_opt_030_model_name_still_works_with_a_deprecation_warning(cls):
    model = ScriptedModel([])
    with pytest.warns(DeprecationWarning, match="model_name"):
        bot = make(cls, model_name=model)
    assert bot.model is model


def test_api_opt_035_a_provider_setting_as_a_keyword_moves_to_model_settings_with_a_warning():
    model = ScriptedModel([text("hi")])
    with pytest.warns(DeprecationWarning, match="model_settings"):
        bot = SimpleBot("p", model=model, temperature=0.3)
    bot("hello")
    assert model.requests[0].params == {"temperature": 0.3}


@pytest.mark.parametrize("cls", [ToTBot, ANoTBot], ids=lambda c: c.__name__)
def test_api_opt_040_a_positional_model_is_deprecated_on_the_bots_that_took_it_first(cls):
    model = ScriptedModel([])
    with pytest.warns(DeprecationWarning, match=r"model=\.\.\."):
        bot = cls(model)
    assert bot.model is model
    with pytest.raises(TypeError, match="both"):
        cls(model, model=model)


def test_api_opt_050_model_settings_are_checked():
    model = ScriptedModel([])
    with pytest.raises(TypeError, match="temperature"):
        SimpleBot("p", model=model, model_settings={"temperature": "hot"})
    with pytest.raises(TypeError, match="set by llamabot"):
        SimpleBot("p", model=model, model_settings={"messages": []})
    with pytest.raises(TypeError, match="option of AgentBot"):
        AgentBot(model=model, model_settings={"max_iterations": 2})
    with pytest.raises(TypeError, match="dict"):
        SimpleBot("p", model=model, model_settings=[("temperature", 1)])


def test_api_opt_060_only_model_settings_reach_the_provider_for_every_kind_of_request():
    model = ScriptedModel([tool_call("respond_to_user", response="ok")])
    AgentBot(model=model, model_settings={"max_tokens": 64, "seed": 7}, max_iterations=3)("q")
    assert model.requests[0].params == {"max_tokens": 64, "seed": 7}


NAMES = ["model_settings", "hooks", "usage_limits", "max_iterations", "max_errors", "history_limit", "hook",
         "max_iteration", "temperature", "tools_", "frobnicate", "model_name", "system_prompt", "approver"]
VALUES = {"model_settings": {"seed": 1}, "hooks": (), "usage_limits": UsageLimits(max_requests=9),
          "max_iterations": 4, "max_errors": 2, "history_limit": 10, "temperature": 0.5, "system_prompt": "Be kind.",
          "approver": (lambda request: True)}
keyword_sets = st.dictionaries(
    st.one_of(st.sampled_from(NAMES), st.text(string.ascii_lowercase + "_", min_size=1, max_size=12)),
    st.sampled_from([0, "x", None, 1.5]), max_size=5)


@settings(max_examples=150, deadline=None)
@given(keywords=keyword_sets, cls=st.sampled_from([SimpleBot, ToolBot, AgentBot, AoTBot, ToTBot]))
def test_api_opt_070_random_keywords_build_a_bot_or_raise_type_error_and_never_reach_the_provider(keywords, cls):
    keywords = {k: VALUES.get(k, v) for k, v in keywords.items() if k not in ("model", "model_name")}
    model = ScriptedModel([text("answer"), tool_call("respond_to_user", response="ok")] * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            bot = make(cls, model=model, **keywords)
        except TypeError:
            return
        except ValueError:  # a known option with a value it cannot take (checked by the option's own tests)
            return
    accepted_settings = dict(bot.model_settings)
    if cls is SimpleBot:
        bot("hello")
    elif cls is AgentBot:
        bot("hello")
    elif cls is ToolBot:
        bot("hello")
    else:
        return  # AoT/ToT: their requests add their own per-call settings; the construction check is the point
    for request in model.requests:
        assert request.params == accepted_settings
    assert set(accepted_settings) <= {"seed", "temperature"}


def test_api_async_010_every_async_name_is_awaited_when_called():
    import asyncio
    import inspect

    from llamabot import AsyncAgentBot, AsyncSimpleBot, AsyncStructuredBot, AsyncToolBot
    from llamabot.reasoning.anot import AsyncANoTBot
    from llamabot.reasoning.aot import AsyncAoTBot
    from llamabot.reasoning.tot import AsyncToTBot

    agent = AsyncAgentBot(model=ScriptedModel([tool_call("respond_to_user", response="ok")]))
    pending = agent("q")
    assert inspect.iscoroutine(pending)
    assert asyncio.run(pending) == "ok"
    for bot, args in [(AsyncSimpleBot("p", model=ScriptedModel([text("hi")])), ("q",)),
                      (AsyncStructuredBot("p", City, model=ScriptedModel(['{"name": "Lyon"}'])), ("q",)),
                      (AsyncToolBot("p", model=ScriptedModel([tool_call("x")])), ("q",)),
                      (AsyncAoTBot(model=ScriptedModel([])), ("q",)),
                      (AsyncToTBot(model=ScriptedModel([])), ("q",)),
                      (AsyncANoTBot(model=ScriptedModel([])), ("q", [{"a": 1}]))]:
        pending = bot(*args)
        assert inspect.isawaitable(pending), type(bot).__name__
        if inspect.iscoroutine(pending) and type(bot).__name__ in ("AsyncAoTBot", "AsyncToTBot", "AsyncANoTBot"):
            pending.close()  # not run: these scripted models hold no replies
        elif type(bot).__name__ != "AsyncToolBot":
            asyncio.run(pending)
        else:
            pending.close()
