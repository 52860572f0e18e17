"""``litellm.completion(model="local/...")`` keeps working for users who call LiteLLM themselves: the provider runs
on the same engine as the seam's direct path (0.5B model, short generations)."""

from __future__ import annotations

import pytest

from llamabot.models.litellm_model import ensure_litellm

pytestmark = pytest.mark.local_model

MODEL = "local/qwen2.5-coder-0.5b"
MESSAGES = [{"role": "user", "content": "Count from 1 to 5, separated by commas."}]


def test_mdl_local_250_litellm_completion_on_the_embedded_model_streams_and_answers():
    litellm = ensure_litellm()
    whole = litellm.completion(model=MODEL, messages=MESSAGES, max_tokens=12, temperature=0)
    text = whole.choices[0].message.content
    assert "1" in text and whole.usage.completion_tokens > 0 and whole.model == MODEL

    chunks = list(
        litellm.completion(model=MODEL, messages=MESSAGES, max_tokens=12, temperature=0, stream=True)
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len(chunks) > 2 and streamed == text  # greedy: the same answer, piece by piece


def test_mdl_local_250_litellm_forced_tool_call_on_the_embedded_model():
    litellm = ensure_litellm()
    tools = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add a and b.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"],
                },
            },
        }
    ]
    reply = litellm.completion(
        model=MODEL,
        messages=[{"role": "user", "content": "Add 2 and 3."}],
        tools=tools,
        tool_choice="required",
        max_tokens=48,
    )
    [call] = reply.choices[0].message.tool_calls
    assert call.function.name == "add" and reply.choices[0].finish_reason == "tool_calls"
