"""Typed errors. Each names what was wrong and where, and says what to do about it."""

from __future__ import annotations

from typing import Any


class LlamabotError(Exception):
    """Base class of every error llamabot raises on purpose."""


class ModelNotConfiguredError(LlamabotError):
    """No model was given, ``LLAMABOT_MODEL`` is unset and the embedded local model is not installed."""


class ModelFileError(LlamabotError):
    """A local GGUF file is missing, incomplete or fails its size/sha256 check."""


class ModelCallError(LlamabotError):
    """A model call failed (provider error, or a reply that cannot be used at all)."""


class ScriptedModelExhausted(ModelCallError):
    """The scripted model was asked for more replies than were queued."""


class ToolDefinitionError(LlamabotError, TypeError):
    """A function cannot become a tool (missing annotation, unsupported parameter kind...)."""


class ToolArgumentsError(LlamabotError, ValueError):
    """The arguments a model gave for a tool are not valid JSON or do not match the tool's schema.

    ``tool`` is the tool name, ``raw_arguments`` what the model wrote, ``errors`` a readable list.
    """

    def __init__(self, tool: str, raw_arguments: Any, errors: list[str]):
        self.tool = tool
        self.raw_arguments = raw_arguments
        self.errors = errors
        detail = "; ".join(errors)
        super().__init__(f"invalid arguments for tool {tool!r}: {detail} (arguments were: {raw_arguments!r})")


class StructuredOutputError(LlamabotError, ValueError):
    """The model's output did not validate against the requested pydantic model after every repair attempt.

    ``raw_output`` is the last text the model produced; ``errors`` the last validation errors.
    """

    def __init__(self, model_name: str, attempts: int, raw_output: str | None, errors: list[str]):
        self.model_name = model_name
        self.attempts = attempts
        self.raw_output = raw_output
        self.errors = errors
        super().__init__(
            f"{model_name}: no valid output after {attempts} attempt(s); last errors: {'; '.join(errors)}; "
            f"last output: {raw_output!r}"
        )


class DependencyCycleError(LlamabotError, ValueError):
    """Dependencies form a cycle, so no order runs every node after the nodes it depends on.

    ``cycle`` is one cycle in dependency order (each node depends on the next; the first node, the one that comes
    first in the input, is repeated at the end); ``cycles`` every cycle found, ``cycle`` first; ``blocked`` every
    node that can never run (in a cycle or behind one), in input order.
    """

    def __init__(self, cycle: tuple[Any, ...], blocked: tuple[Any, ...], cycles: tuple[tuple[Any, ...], ...] = ()):
        self.cycle = cycle
        self.blocked = blocked
        self.cycles = cycles or (cycle,)
        super().__init__(
            f"dependency cycle: {' -> '.join(map(str, cycle))}; blocked by it: {', '.join(map(str, blocked))}. "
            "A node may not depend, directly or indirectly, on itself"
        )
