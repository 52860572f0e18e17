"""Which model a bot talks to: ``get_model`` turns ``model=`` (a LiteLLM model string, ``local/...``, a chat model
object, a list of them, or ``None``: the default) into a chat model, and ``model_family`` names its family for
provider quirks. A list (``model=[primary, fallback, ...]``) becomes a
:class:`~llamabot.models.fallback.FallbackModel`: the next model is tried when one fails with a provider error."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llamabot.errors import ModelNotConfiguredError
from llamabot.models.base import ChatModel
from llamabot.models.fallback import FallbackModel
from llamabot.models.registry import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    local_runtime_installed,
    parts_installed,
)
from llamabot.settings import setting


def default_model_name() -> str:
    """``$LLAMABOT_MODEL``, else the embedded default when the ``local`` extra is installed, else an error."""
    env = setting("LLAMABOT_MODEL")
    if env:
        return env
    default_alias = DEFAULT_LOCAL_MODEL.split("/", 1)[1]
    if local_runtime_installed() and parts_installed(LOCAL_MODELS[default_alias]):
        return DEFAULT_LOCAL_MODEL
    raise ModelNotConfiguredError(
        "no model configured: pass model_name=... (any LiteLLM model string, e.g. 'gpt-4.1-mini' or "
        "'ollama_chat/qwen2.5'), or set LLAMABOT_MODEL, or install the embedded local model with "
        'pip install "llamabot[local]"'
    )


#: What ``model=`` takes: a model string, a chat model, a list of them (a fallback chain), or ``None`` (the default).
ModelSpec = str | ChatModel | list[str | ChatModel] | tuple[str | ChatModel, ...] | None


def get_model(model: ModelSpec = None) -> ChatModel:
    """Resolve ``model``: a chat model object as is; ``local/...`` as a :class:`LocalModel`; any other model
    string (or the default) via LiteLLM; a list of them as a :class:`~llamabot.models.fallback.FallbackModel`
    (``TypeError`` or ``ValueError`` for a list that is empty, nested or holds what is not a model)."""
    if model is not None and not isinstance(model, str):
        if isinstance(model, ChatModel):
            return model
        if isinstance(model, (list, tuple)):
            return fallback_chain(model)
        raise TypeError(f"model= (model_name=) must be a LiteLLM model string, a chat model or a list of them "
                        f"(a fallback chain), got {type(model).__name__}")
    name = model or default_model_name()
    if name.startswith("local/"):  # the embedded model, driven directly: tokens at llama.cpp's own speed
        from llamabot.models.local.model import LocalModel

        return LocalModel(name)
    from llamabot.models.litellm_model import LiteLLMModel

    return LiteLLMModel(name)


def model_family(model: str | ChatModel) -> str:
    """A coarse family used for provider quirks: ``local``, ``ollama``, ``scripted`` or ``remote`` (a fallback
    chain: its first model's)."""
    if isinstance(model, FallbackModel):
        return model_family(model.primary)
    name = model if isinstance(model, str) else getattr(model, "name", "")
    if name.startswith("local/"):
        return "local"
    if name.startswith(("ollama/", "ollama_chat/")):
        return "ollama"
    if not isinstance(model, str) and not hasattr(model, "model_string"):
        return "scripted"
    return "remote"


def chain_of(models: Any) -> tuple[ChatModel, ...]:
    """The chat models of ``models`` (a list of model strings and chat models), checked and resolved (a
    :class:`FallbackModel` among them is kept as one; the chain made of them flattens it). ``ValueError`` for no model or an empty name,
    ``TypeError`` for anything else that is not a model, naming its place in the list."""
    if isinstance(models, (str, bytes)) or not isinstance(models, Iterable):
        raise TypeError(f"a fallback chain is a list of models, got {type(models).__name__}")
    chain: list[ChatModel] = []
    for index, item in enumerate(models):
        where = f"model=[...] item {index}"
        if isinstance(item, str):
            if not item.strip():
                raise ValueError(f"{where} is an empty model name; name every model of the chain")
        elif isinstance(item, (list, tuple)):
            raise TypeError(f"{where} is a {type(item).__name__}: fallback chains do not nest; list every model "
                            "once, in the order to try them")
        elif isinstance(item, dict):
            raise TypeError(f"{where} is a dict; settings of one model go on its object, e.g. "
                            "LiteLLMModel('anthropic/...', api_key=...), and model_settings= apply to every model")
        elif not isinstance(item, ChatModel):
            raise TypeError(f"{where} is {type(item).__name__}, not a model: give a LiteLLM model string "
                            "('gpt-4.1-mini', 'local/qwen2.5-coder-1.5b') or a chat model object")
        chain.append(get_model(item))
    if not chain:
        raise ValueError("model=[] names no model; give at least one (the first model, then its fallbacks)")
    return tuple(chain)


def fallback_chain(models: Any) -> ChatModel:
    """What ``model=[...]`` means: a :class:`FallbackModel` of the models, or the one model of a list of one."""
    chain = chain_of(models)
    return chain[0] if len(chain) == 1 else FallbackModel(chain)


__all__ = ["ModelSpec", "chain_of", "default_model_name", "fallback_chain", "get_model", "model_family"]
