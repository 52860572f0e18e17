"""What a bot takes as a query (HRD-SEC-110): None, bytes or a dict never reach the model; ``TypeError`` names the
type and what is accepted."""

from __future__ import annotations

import asyncio

import pytest

from llamabot import AgentBot, ScriptedModel, SimpleBot
from llamabot.bot.simplebot import AsyncSimpleBot

NOT_A_QUERY = [None, b"what is 2 + 2?", {"role": "user", "content": "hi"}, 42]


@pytest.mark.parametrize("query", NOT_A_QUERY, ids=lambda q: type(q).__name__)
@pytest.mark.parametrize("run", ["call", "arun"])
def test_hrd_sec_110_an_agent_refuses_a_query_that_is_not_a_str(query, run):
    model = ScriptedModel(responder=lambda request: "never asked")
    bot = AgentBot([], model=model)
    with pytest.raises(TypeError) as raised:
        bot(query) if run == "call" else asyncio.run(bot.arun(query))
    assert f"must be a str (the user's message), not a {type(query).__name__}" in str(raised.value)
    assert model.requests == [] and bot.memory == []


@pytest.mark.parametrize("message, words", [
    (None, "message 0: cannot use a NoneType as a chat message; pass a str"),
    (b"hello", "message 0: cannot use a bytes as a chat message"),
    ({"role": "user", "content": b"hello"}, "message 0 (user): the 'content' must be a str, a list of content parts or "
                                             "None, not a bytes"),
    ({"role": "user", "content": {"text": "hi"}}, "not a dict"),
    ({"role": 1, "content": "hi"}, "message 0: the 'role' must be a str, not a int"),
])
@pytest.mark.parametrize("bot_class", [SimpleBot, AsyncSimpleBot])
def test_hrd_sec_110_a_simple_bot_refuses_what_is_not_a_message(message, words, bot_class):
    model = ScriptedModel(responder=lambda request: "never asked")
    bot = bot_class("Be brief.", model=model)
    with pytest.raises(TypeError, match=words.replace("(", r"\(").replace(")", r"\)")):
        asyncio.run(bot(message)) if bot_class is AsyncSimpleBot else bot(message)
    assert model.requests == []


def test_hrd_sec_110_a_simple_bot_still_takes_strs_and_message_dicts():
    model = ScriptedModel(["ok"])
    assert SimpleBot("Be brief.", model=model)("hi", {"role": "assistant", "content": None},
                                                {"role": "user", "content": [{"type": "text", "text": "x"}]}).content == "ok"
