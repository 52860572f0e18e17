"""The embedded llama.cpp model behind ``local/<alias or path.gguf>``.

Modules: ``runtime`` (loading, settings, caches), ``engine`` (prompt, prefix reuse, grammar-constrained tool calls
and ``response_format``, generation), ``prefix_cache`` (pure caches), ``grammar`` (pure schemas and message
adaptation), ``model`` (the seam's :class:`~llamabot.models.local.model.LocalModel`, no LiteLLM) and ``provider``
(:class:`LocalProvider`, the LiteLLM custom provider).

The provider's names are importable from here (``from llamabot.models.local import LocalProvider``) but load on
first use: importing this package, or ``llamabot.models.local.model``, does not import LiteLLM.
"""

from llamabot.lazy import lazy_attributes

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "TOOL_CALL_OPEN",
    "LocalEngine",
    "LocalProvider",
    "LoadedModel",
    "litellm",
    "loaded_model",
    "to_model_response",
]

_PROVIDER = "llamabot.models.local.provider"
__getattr__, __dir__ = lazy_attributes(
    __name__, {name: _PROVIDER for name in (*__all__, "_chunk", "_chunks")}, globals(), __all__
)
