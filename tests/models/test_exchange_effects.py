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


class Recorder:
    """A step runner (as a durable run's) that records what it carries out, then carries it out."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def step(self, request, model, on_token):
        from llamabot.models.exchange import carry_out

        self.seen.append(type(request).__name__)
        return carry_out(request, model, on_token)

    async def astep(self, request, model, on_token):
        from llamabot.models.exchange import acarry_out

        self.seen.append(type(request).__name__)
        return await acarry_out(request, model, on_token)


def one_effect_generator():
    return f"got {(yield Which())}"


def one_effect_single():
    from llamabot.models.exchange import Single

    return Single(Which(), lambda reply: f"got {reply}")


def composed(inner):
    first = yield from inner()
    second = yield from inner()
    return f"{first}, {second}"


async def test_bot_exch_020_a_single_request_exchange_is_the_generator_it_stands_for():
    """BOT-EXCH-020: a ``Single`` (one request, then ``finish(reply)``) gives what the equivalent generator gives
    under both drivers, inside ``yield from``, and under a step runner (each request handed to it once); a request
    that is no effect is a TypeError naming it."""
    import pytest

    from llamabot.models.exchange import Single, using_steps

    for make in (one_effect_generator, one_effect_single):
        assert run_exchange(make()) == "got sync"
        assert await arun_exchange(make()) == "got async"
        assert run_exchange(composed(make)) == "got sync, got sync"
        assert await arun_exchange(composed(make)) == "got async, got async"
        runner = Recorder()
        with using_steps(runner):
            assert run_exchange(make()) == "got sync"
            assert await arun_exchange(make()) == "got async"
        assert runner.seen == ["Which", "Which"]
    with pytest.raises(TypeError, match="an exchange yielded int, which is neither a ModelRequest nor an effect"):
        run_exchange(Single(3, str))
    with pytest.raises(TypeError, match="the driver was given no model"):
        await arun_exchange(Single(ModelRequest(model="scripted", messages=[]), str))
