"""The model seam: resolving model names, LiteLLM pass-through, user providers, tracing of calls."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from llamabot.errors import ModelNotConfiguredError
from llamabot.models import registry, resolve
from llamabot.models.litellm_model import LiteLLMModel
from llamabot.models.reply import ModelRequest
from llamabot.models.resolve import default_model_name, get_model, model_family
from llamabot.models.scripted import ScriptedModel
from llamabot.models.seam import call_model
from llamabot.observe.tracing import capture


def test_mdl_seam_010_model_strings_go_through_litellm_and_chat_models_pass_through():
    assert isinstance(get_model("gpt-4.1-mini"), LiteLLMModel)
    scripted = ScriptedModel()
    assert get_model(scripted) is scripted
    with pytest.raises(TypeError, match="model_name"):
        get_model(42)  # type: ignore[arg-type]


def test_mdl_seam_020_explicit_name_wins_over_environment(monkeypatch):
    monkeypatch.setenv("LLAMABOT_MODEL", "ollama_chat/qwen2.5")
    assert get_model("anthropic/claude-x").name == "anthropic/claude-x"
    assert get_model(None).name == "ollama_chat/qwen2.5"


def test_mdl_seam_020_embedded_default_when_installed(monkeypatch):
    monkeypatch.delenv("LLAMABOT_MODEL", raising=False)
    monkeypatch.setattr(resolve, "local_runtime_installed", lambda: True)
    monkeypatch.setattr(resolve, "parts_installed", lambda spec: True)
    assert default_model_name() == registry.DEFAULT_LOCAL_MODEL


def test_mdl_seam_020_no_model_anywhere_raises_with_instructions(monkeypatch):
    monkeypatch.delenv("LLAMABOT_MODEL", raising=False)
    monkeypatch.setattr(resolve, "local_runtime_installed", lambda: False)
    with pytest.raises(ModelNotConfiguredError, match="LLAMABOT_MODEL") as info:
        get_model(None)
    assert "llamabot[local]" in str(info.value) and "model_name" in str(info.value)


def test_mdl_seam_030_model_family_drives_provider_quirks():
    assert model_family("local/qwen2.5-coder-1.5b") == "local"
    assert model_family("ollama_chat/qwen2.5") == "ollama"
    assert model_family("gpt-4.1-mini") == "remote"
    assert model_family(ScriptedModel()) == "scripted"


def test_mdl_seam_040_model_calls_are_recorded_as_spans_with_tokens_latency_and_reply():
    model = ScriptedModel(["hello"])
    with capture() as trace:
        call_model(model, ModelRequest(model="scripted", messages=[{"role": "user", "content": "hi"}]))
    [span] = trace.of_kind("model_call")
    assert span.attributes["reply"].content == "hello"
    assert trace.to_dict()["spans"][0]["attributes"]["reply"]["content"] == "hello"
    exported = trace.to_dict()["spans"][0]["attributes"]
    assert exported["prompt_tokens"] > 0 and exported["latency_s"] >= 0
    assert exported["request"]["messages"] == 1 and exported["request"]["last_user_text"] == "hi"
    assert span.end is not None and span.error is None


def test_mdl_seam_040_failed_model_calls_record_the_error():
    model = ScriptedModel([ConnectionError("down")])
    with capture() as trace, pytest.raises(ConnectionError):
        call_model(model, ModelRequest(model="scripted", messages=[]))
    assert trace.of_kind("model_call")[0].error == "ConnectionError: down"


def test_mdl_seam_045_a_model_call_is_the_active_span_only_for_hooks_that_listen_to_tokens():
    """Nothing nests in a model call, so its span is made the active one only when token deltas (which name the
    active span) go to the run's hooks; spans a model opens anyway are then siblings of the call."""
    from llamabot.observe.hooks import RunHooks
    from llamabot.observe.tracing import close_span, current_span, open_span

    class Peeking(ScriptedModel):
        def complete(self, request, on_token=None):
            seen.append(current_span().name)
            close_span(open_span("inside", "node"))
            return super().complete(request, on_token)

    class Tokens(RunHooks):
        def on_token(self, span, delta):
            pass

    request = ModelRequest("peeking", [{"role": "user", "content": "hi"}])
    for hooks, active in (((), "outer"), ((Tokens(),), "model_call")):
        seen: list[str] = []
        with capture(hooks=hooks) as trace:
            outer = open_span("outer", "node")
            call_model(Peeking(["hello"], name="peeking"), request)
            close_span(outer)
        by_name = {s.name: s for s in trace.spans}
        assert seen == [active]
        assert by_name["inside"].parent_id == by_name[active].span_id
        assert by_name["model_call"].parent_id == by_name["outer"].span_id and by_name["model_call"].end is not None


def test_mdl_seam_050_user_custom_providers_work_and_are_never_overwritten():
    """Runs in a fresh interpreter: LiteLLM is imported for real, with a provider the user registered."""
    script = textwrap.dedent(
        """
        import litellm
        from litellm import CustomLLM
        import llamabot
        from llamabot import SimpleBot

        seen = {}

        class Mine(CustomLLM):
            def completion(self, model, messages, *args, optional_params=None, **kwargs):
                seen["params"] = dict(optional_params or {})
                seen["messages"] = messages
                return litellm.completion(model="gpt-3.5-turbo", messages=messages, mock_response="from mine")

        mine, my_local = Mine(), Mine()
        litellm.custom_provider_map = [
            {"provider": "mine", "custom_handler": mine},
            {"provider": "local", "custom_handler": my_local},
        ]
        bot = SimpleBot("sys", model_name="mine/some-model", temperature=0.3, max_tokens=7)
        assert str(bot("hello")) == "from mine"
        assert seen["params"]["temperature"] == 0.3 and seen["params"]["max_tokens"] == 7, seen
        assert seen["messages"][0] == {"role": "system", "content": "sys"}
        handlers = {e["provider"]: e["custom_handler"] for e in litellm.custom_provider_map}
        assert handlers["mine"] is mine and handlers["local"] is my_local, handlers
        print("OK")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("OK")


def test_mdl_seam_070_a_provider_call_without_an_id_gets_a_unique_one():
    """Decisions and results are keyed by call id: a provider that sends none (index fallback ``call_0``) made the
    first call of every reply the same id, so a later call could take an earlier call's approval."""
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, ModelResponse

    from llamabot.models.litellm_model import reply_from_litellm

    def response() -> ModelResponse:
        calls = [ChatCompletionMessageToolCall(type="function", function=Function(name=n, arguments="{}"))
                 for n in ("a", "b")]
        for call in calls:
            call.id = ""  # as a provider that sends none (LiteLLM's own type would make one up)
        return ModelResponse(model="probe/m", choices=[Choices(
            index=0, message=Message(content=None, role="assistant", tool_calls=calls), finish_reason="tool_calls")])

    ids = [call.id for _ in range(3) for call in reply_from_litellm(response(), 0.0).tool_calls]
    assert len(set(ids)) == 6 and all(i.startswith("call_") for i in ids)
