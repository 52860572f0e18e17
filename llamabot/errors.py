"""Typed errors. Each names what was wrong and where, and says what to do about it."""

from __future__ import annotations

from asyncio import CancelledError
from typing import Any

#: How much of a raw value an error message quotes (errors are shown to models, which send them back).
EXCERPT_CHARS = 200


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, saying how long it was: ``'{"a": 1...' ... (1048576 chars)``.

    Error messages quote model output through this, so a 1 MB malformed call costs the next request about
    ``limit`` characters, not a megabyte (and not two after the model repeats it).
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}... ({len(value)} chars)"
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # an integer past the digit limit, a structure nested too deeply
        return f"<{type(value).__name__} that cannot be shown>"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


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

    ``tool`` is the tool name, ``raw_arguments`` what the model wrote (whole), ``errors`` a readable list. The
    message quotes a bounded excerpt of the arguments (see :func:`excerpt`), since it is shown to the model.
    """

    def __init__(self, tool: str, raw_arguments: Any, errors: list[str]):
        self.tool = tool
        self.raw_arguments = raw_arguments
        self.errors = errors
        detail = "; ".join(errors)
        super().__init__(f"invalid arguments for tool {tool!r}: {detail} (arguments were: {excerpt(raw_arguments)})")


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
            f"last output: {excerpt(raw_output)}"
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


class ToolUnavailableError(LlamabotError, RuntimeError):
    """What a tool stands on is gone (e.g. the process of an MCP server exited): no call of it can succeed, so the
    tool-call logic raises this and the run ends with it, instead of showing it to the model as a tool's error."""


#: What a tool may raise that ends the run rather than failing the call: the run's cancellation and Ctrl-C. Any other
#: exception a tool raises (``SystemExit`` from argparse, ``GeneratorExit``, ``StopIteration``) fails that call only.
RUN_ENDING: tuple[type[BaseException], ...] = (KeyboardInterrupt, CancelledError)


class ToolCrashedError(LlamabotError, RuntimeError):
    """A tool raised what is not an ordinary exception: a ``BaseException`` such as ``SystemExit`` (argparse inside
    a tool), ``GeneratorExit``, or ``StopIteration`` (which cannot cross a future or a coroutine). The call failed
    with it, as with any exception: the model is shown this error and the run goes on. ``tool`` is the tool's
    name, ``original`` what it raised (also the ``__cause__`` when raised)."""

    def __init__(self, tool: str, original: BaseException):
        self.tool, self.original = tool, original
        try:
            detail = str(original)
        except Exception:  # noqa: BLE001 - a broken __str__ must not hide the failure
            detail = ""
        detail = f": {detail[:EXCERPT_CHARS]}" if detail else ""
        super().__init__(
            f"tool {tool!r} raised {type(original).__name__}{detail}; a tool should raise an Exception (this call "
            "failed; the run goes on)"
        )


class ToolResultError(LlamabotError, TypeError):
    """A tool returned a value that cannot be shown to the model: neither JSON, ``str`` nor ``repr`` makes it
    text (they raise, or it nests too deeply). The call failed with this error; ``tool`` names the tool,
    ``result_type`` is the value's type."""

    def __init__(self, tool: str, result_type: type, cause: BaseException):
        self.tool, self.result_type = tool, result_type
        super().__init__(
            f"the result of tool {tool!r} (a {result_type.__qualname__}) cannot be shown to the model: making it "
            f"text raised {type(cause).__name__}; return a str, or data that JSON, str() or repr() can write"
        )


def tool_failure(tool: str, exc: BaseException) -> Exception:
    """What a call's outcome carries for ``exc``, raised by ``tool``: an ordinary exception as it is, anything
    else (a ``BaseException``, ``StopIteration``) in a :class:`ToolCrashedError`."""
    if isinstance(exc, Exception) and not isinstance(exc, (StopIteration, StopAsyncIteration)):
        return exc
    crashed = ToolCrashedError(tool, exc)
    crashed.__cause__ = exc
    return crashed


class MCPServerError(ToolUnavailableError):
    """An MCP server cannot be used: it did not start, it exited, or it closed the connection.

    ``server`` names it (the command, or the URL without credentials); ``problem`` says what happened.
    """

    def __init__(self, server: str, problem: str):
        self.server, self.problem = server, problem
        super().__init__(f"MCP server {server!r}: {problem}")


class SettingsError(LlamabotError, ValueError):
    """A ``LLAMABOT_*`` environment variable (or a setting given in code) has a value that cannot be used; the
    message names the variable and says what it takes."""
