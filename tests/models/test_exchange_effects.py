"""The exchange drivers run model requests and effects alike (BOT-EXCH-*: one exchange, two drivers)."""

from __future__ import annotations

from dataclasses import dataclass

from llamabot.models.exchange import answered, arun_exchange, reply_to, run_exchange
from llamabot.models.reply import ModelRequest
from llamabot.models.scripted import ScriptedModel, text


@dataclass
class Which:
    """An effect that says which driver ran it."""

    def run(self) -> str:
        return "sync"

    async def arun(self) -> str:
        return "async"


def model_then_effect():
    reply = yield ModelRequest(model="scripted", messages=[{"role": "user", "content": "hi"}])
    driver = yield Which()
    return f"{reply.content} from {driver}"


async def test_bot_exch_010_an_exchange_may_mix_model_requests_and_effects_under_both_drivers():
    assert run_exchange(model_then_effect(), ScriptedModel([text("hello")])) == "hello from sync"
    assert await arun_exchange(model_then_effect(), ScriptedModel([text("hello")])) == "hello from async"



async def test_bot_exch_020_answered_gives_the_first_request_a_reply_made_earlier():
    """``answered``: the first request is answered by a reply made before (AoT's drafts), later ones by the
    driver; ``reply_to`` is an exchange of one request returning its reply."""
    model = ScriptedModel([text("earlier")])
    earlier = run_exchange(reply_to(ModelRequest(model="scripted", messages=[{"role": "user", "content": "hi"}])), model)
    assert earlier.content == "earlier" and len(model.requests) == 1
    assert run_exchange(answered(model_then_effect(), earlier)) == "earlier from sync"  # no model: none called
    assert await arun_exchange(answered(model_then_effect(), earlier)) == "earlier from async"

    def two_requests():
        first = yield ModelRequest(model="scripted", messages=[{"role": "user", "content": "1"}])
        second = yield ModelRequest(model="scripted", messages=[{"role": "user", "content": "2"}])
        return first.content + " then " + second.content

    later = ScriptedModel([text("later")])
    assert run_exchange(answered(two_requests(), earlier), later) == "earlier then later"
    assert [r.messages[0]["content"] for r in later.requests] == ["2"]
