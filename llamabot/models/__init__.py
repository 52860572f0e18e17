"""The model layer: one seam over LiteLLM, the embedded ``local/`` provider and the scripted model, and fallback
chains of them.

Importing this package does not import LiteLLM or llama.cpp.
"""

from llamabot.models.base import ChatModel
from llamabot.models.fallback import FallbackModel, ModelFallbackError
from llamabot.models.registry import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, LocalModelSpec
from llamabot.models.reply import ModelReply, ModelRequest, ToolCallRequest, Usage
from llamabot.models.resolve import default_model_name, get_model
from llamabot.models.scripted import ScriptedModel
from llamabot.models.seam import acall_model, call_model

__all__ = [
    "DEFAULT_LOCAL_MODEL", "LOCAL_MODELS", "ChatModel", "FallbackModel", "LocalModelSpec", "ModelFallbackError",
    "ModelReply", "ModelRequest", "ScriptedModel", "ToolCallRequest", "Usage", "acall_model", "call_model",
    "default_model_name", "get_model",
]
