"""The exchange drivers run model requests and effects alike (BOT-EXCH-*: one exchange, two drivers)."""

from __future__ import annotations

from dataclasses import dataclass

from llamabot.models.exchange import arun_exchange, run_exchange
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

