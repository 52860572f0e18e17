"""Model settings: what a bot passes to the model provider, and nothing else.

Every bot takes ``model_settings=`` (a dict, typed as :class:`ModelSettings`): sampling (``temperature``,
``max_tokens``...), and the provider's connection (``api_base``, ``api_key``...). It is the only way a value
reaches the provider: an unknown keyword on a bot's constructor is a ``TypeError``, never forwarded.

Known keys are checked for their type; other keys pass through to LiteLLM as they are (a provider's own
parameters), except the ones llamabot sets itself for every request (``messages``, ``tools``...).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic validates only this TypedDict before Python 3.12


class ModelSettings(TypedDict, total=False):
    """The provider settings llamabot knows by name (any LiteLLM parameter may be given besides them)."""

    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    max_completion_tokens: int
    stop: str | list[str]
    seed: int
    presence_penalty: float
    frequency_penalty: float
    repeat_penalty: float
    logit_bias: dict[str, float]
    timeout: float
    num_retries: int
    api_base: str
    base_url: str
    api_key: str
    api_version: str
    extra_headers: dict[str, str]
    parallel_tool_calls: bool
    reasoning_effort: str
    user: str


#: The names of :class:`ModelSettings`.
MODEL_SETTING_NAMES = frozenset(ModelSettings.__annotations__)

#: Request fields llamabot sets on every request itself: a setting of the same name would contradict them.
RESERVED = frozenset({"model", "messages", "tools", "tool_choice", "response_format", "stream", "stream_options"})


@functools.cache
def _adapter() -> TypeAdapter[ModelSettings]:
    return TypeAdapter(ModelSettings)


def check_model_settings(settings: Mapping[str, Any] | None, owner: str,
                         options: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``settings`` as a new dict, checked: a mapping with string keys, known keys of the right type, no
    reserved key and no option of the bot ``owner`` (``options``: its constructor's keywords), which belongs on
    the constructor. ``TypeError`` naming the key otherwise."""
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise TypeError(f"{owner}: model_settings must be a dict of provider settings, got {type(settings).__name__}")
    for key in settings:
        if not isinstance(key, str):
            raise TypeError(f"{owner}: model_settings keys must be strings, got {key!r}")
        if key in RESERVED:
            raise TypeError(f"{owner}: model_settings[{key!r}] is set by llamabot for each request; remove it")
        if key in options:
            raise TypeError(f"{owner}: {key!r} is an option of {owner}, not a model setting; "
                            f"pass it as {owner}({key}=...)")
    known = {key: value for key, value in settings.items() if key in MODEL_SETTING_NAMES}
    try:
        if known:
            _adapter().validate_python(known, strict=True)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False))
        raise TypeError(f"{owner}: invalid model_settings ({problems})") from None
    return dict(settings)
