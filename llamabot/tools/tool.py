"""``@tool``: a typed function becomes a tool, i.e. a description (JSON schema) plus the function.

The decorated function stays a plain callable. It gains ``.json_schema`` (OpenAI tool format),
``.loopback_name`` and ``.tool`` (the immutable :class:`Tool`). Calling a tool as a run does (validation, hidden
parameters, timeout, retries) is :func:`llamabot.tools.call.invoke_tool` / ``ainvoke_tool``; a tool described by a
JSON schema instead of a signature is :func:`llamabot.tools.schema_tool.schema_tool`. Nothing here holds graph state: graph nodes
are built per graph from these descriptions. A tool may carry how it is to be called: a ``timeout`` per
attempt, a retry policy (``retries=`` or ``retry=``), and whether it blocks; calling it is
:mod:`llamabot.tools.call`'s job.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_type_hints

from pydantic import BaseModel, ValidationError

from llamabot.errors import ToolArgumentsError, ToolDefinitionError
from llamabot.observe.tracing import active_run
from llamabot.tools.context import DEPS, context_parameter, run_context
from llamabot.tools.retry import Retry
from llamabot.tools.schema import (
    arguments_model,
    fields_validator,
    function_schema,
    is_hidden,
    parameters_schema,
)

F = TypeVar("F", bound=Callable[..., Any])

#: The loopback action of a non-terminal tool: after it runs, the graph goes back to the decision node.
DECIDE = "decide"


@dataclass(frozen=True, slots=True)
class Tool:
    """An immutable tool description bound to its function.

    ``loopback_name`` is the action a graph follows after the tool ran (``"decide"``), or ``None`` for a
    terminal tool whose result ends the run. ``timeout``: seconds one attempt may take (``None``: no limit);
    ``retry``: the retry policy (``None``: one attempt); ``blocking=False``: a sync tool that returns at once,
    which async runs call on the event loop instead of in a worker thread. ``requires_approval=True``: no run calls
    this tool without a decision (see :mod:`llamabot.tools.approval`).
    ``afunc``: a coroutine twin of a sync ``func`` that async runs await instead (an MCP tool has both).
    ``schema_check``: set by :func:`~llamabot.tools.schema_tool.schema_tool`: the arguments are checked against the JSON schema as given
    (it returns the problems found) instead of by the ``arguments`` model. ``runs_steps``: the tool makes model and
    tool calls of its own through the run's exchanges (an agent used as a tool): a durable run records those calls
    as its steps instead of the tool call as one step.
    """

    name: str
    description: str
    func: Callable[..., Any]
    arguments: type[BaseModel]
    json_schema: dict[str, Any]
    loopback_name: str | None
    hidden: tuple[str, ...]
    is_async: bool
    hidden_required: tuple[str, ...] = ()
    timeout: float | None = None
    retry: Retry | None = None
    blocking: bool = True
    requires_approval: bool = False
    afunc: Callable[..., Awaitable[Any]] | None = None
    schema_check: Callable[[dict[str, Any]], list[str]] | None = None
    runs_steps: bool = False
    #: the parameter that receives the :class:`~llamabot.tools.context.RunContext` (also in ``hidden``), or ``None``
    context_param: str | None = None
    #: ``arguments``' fields validator (:func:`~llamabot.tools.schema.fields_validator`), made with the tool
    fields: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.fields is None and self.schema_check is None:
            object.__setattr__(self, "fields", fields_validator(self.arguments))

    @property
    def is_terminal(self) -> bool:
        return self.loopback_name is None

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the visible arguments."""
        return self.json_schema["function"]["parameters"]

    def validate(self, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        """Parse and validate model-supplied arguments; return keyword arguments for the function.

        ``arguments`` may be the raw JSON text from the model or an already-parsed dict. Raises
        :class:`ToolArgumentsError` naming the tool, the raw arguments and every problem found, whatever the
        text (malformed, nested too deeply, numbers past Python's digit limit): nothing else escapes.
        """
        raw = arguments
        if type(arguments) is str and arguments[:1] == "{" and self.schema_check is None:
            try:  # fast path: pydantic-core parses and validates the JSON object in one step
                if self.fields is not None:  # the fields alone: no model object made
                    return self.fields.validate_json(arguments)[0]
                return dict(self.arguments.__pydantic_validator__.validate_json(arguments).__dict__)
            except ValidationError:
                pass  # redo below, for an error message that says exactly what is wrong
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                raise ToolArgumentsError(self.name, raw, [f"arguments are not valid JSON: {exc}"]) from exc
            except ValueError as exc:  # an integer past Python's digit limit (json raises a plain ValueError)
                raise ToolArgumentsError(self.name, raw, [f"arguments hold a number that is too large: {exc}"]) from exc
            except RecursionError as exc:
                raise ToolArgumentsError(self.name, raw, ["arguments are nested too deeply"]) from exc
        if type(arguments) is dict and not arguments and not self.arguments.model_fields:
            return {}
        if not isinstance(arguments, dict):
            raise ToolArgumentsError(
                self.name, raw, [f"arguments must be a JSON object, got {type(arguments).__name__}"]
            )
        if self.schema_check is not None:  # a schema-first tool: the JSON schema, as given, is the contract
            problems = self.schema_check(arguments)
            if problems:
                raise ToolArgumentsError(self.name, raw, problems)
            return dict(arguments)
        try:
            validated = self.arguments.model_validate(arguments)
        except ValidationError as exc:
            raise ToolArgumentsError(self.name, raw, _format_validation_errors(exc)) from exc
        except RecursionError as exc:  # a dict nested too deeply to validate (whatever its source)
            raise ToolArgumentsError(self.name, raw, ["arguments are nested too deeply"]) from exc
        # Keep nested models and enums as validated objects; only the top-level fields are unpacked.
        return dict(validated.__dict__)

    def bind(self, arguments: str | dict[str, Any] | None, context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Validated keyword arguments plus hidden ones injected from ``context``.

        A hidden parameter ``_name`` receives ``context["name"]`` when the context has it (``_deps``: the active
        run's deps when it does not); otherwise its default. The ``RunContext`` parameter receives the run's context
        (:func:`~llamabot.tools.context.run_context`).
        """
        return self.inject(self.validate(arguments), context)

    def inject(self, kwargs: dict[str, Any], context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Add the hidden parameters to already-validated ``kwargs`` (a new dict; ``kwargs`` is not changed)."""
        if not self.hidden:
            return kwargs
        kwargs = dict(kwargs)
        context = context or {}
        for pname in self.hidden:
            key = pname.lstrip("_")
            if pname == self.context_param:
                kwargs[pname] = run_context(self.name, context)
            elif key in context:
                kwargs[pname] = context[key]
            elif key == DEPS and (active := active_run()) is not None:
                kwargs[pname] = active[0].values.get(DEPS)
            elif pname in self.hidden_required:
                raise ToolDefinitionError(
                    f"tool {self.name!r} needs hidden parameter {pname!r}, which is injected from the run "
                    f"context key {key!r}; the context has: {', '.join(sorted(context)) or '(nothing)'}. "
                    "Give the parameter a default or run the tool where that context exists."
                )
        return kwargs


def _format_validation_errors(exc: ValidationError) -> list[str]:
    messages = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        messages.append(f"{location}: {error['msg']}")
    return messages


def call_policy(
    name: str,
    *,
    loopback_name: str | None = DECIDE,
    timeout: float | None = None,
    retries: int | None = None,
    retry: Retry | None = None,
    blocking: bool = True,
    requires_approval: bool = False,
) -> dict[str, Any]:
    """How the tool ``name`` is called, checked: the :class:`Tool` fields every way of making a tool shares
    (``@tool``/:func:`build_tool` and :func:`llamabot.tools.schema_tool.schema_tool`). Raises
    :class:`ToolDefinitionError` naming the tool for a bad timeout or retry policy."""
    return {
        "loopback_name": loopback_name,
        "timeout": _checked_timeout(name, timeout),
        "retry": _retry_policy(name, retries, retry),
        "blocking": blocking,
        "requires_approval": bool(requires_approval),
    }


def build_tool(func: Callable[..., Any], *, name: str | None = None, **options: Any) -> Tool:
    """Build the :class:`Tool` description of ``func`` (used by :func:`tool`).

    ``retries=n`` is ``retry=Retry(attempts=n + 1)`` (the default backoff); give one or the other.
    """
    if not callable(func):
        raise ToolDefinitionError(f"@tool needs a function, got {type(func).__name__}")
    tool_name = name or getattr(func, "__name__", None)
    if not tool_name or tool_name == "<lambda>":
        raise ToolDefinitionError("@tool needs a named function (or pass name=...)")
    model, description = arguments_model(func, tool_name)
    schema = function_schema(tool_name, description, parameters_schema(model))
    parameters = inspect.signature(func).parameters
    try:
        context_param = context_parameter(func, get_type_hints(func, include_extras=True), tool_name)
    except ValueError as exc:
        raise ToolDefinitionError(str(exc)) from None
    hidden = tuple(p for p in parameters if is_hidden(p) or p == context_param)
    hidden_required = tuple(p for p in hidden if parameters[p].default is inspect.Parameter.empty
                            and p != context_param)
    return Tool(
        name=tool_name,
        description=description,
        func=func,
        arguments=model,
        json_schema=schema,
        hidden=hidden,
        is_async=inspect.iscoroutinefunction(func),
        hidden_required=hidden_required,
        context_param=context_param,
        **call_policy(tool_name, **options),
    )


def _checked_timeout(name: str, timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ToolDefinitionError(f"tool {name!r}: timeout must be a number of seconds > 0, got {timeout!r}")
    return float(timeout)


def _retry_policy(name: str, retries: int | None, retry: Retry | None) -> Retry | None:
    if retries is not None and retry is not None:
        raise ToolDefinitionError(f"tool {name!r}: give retries= or retry=, not both")
    if retry is not None and not isinstance(retry, Retry):
        raise ToolDefinitionError(f"tool {name!r}: retry must be a llamabot.tools.Retry, got {type(retry).__name__}")
    if retries is None:
        return retry
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ToolDefinitionError(f"tool {name!r}: retries must be an int >= 0 (extra attempts), got {retries!r}")
    return Retry(attempts=retries + 1) if retries else None


def tool(func: Any = None, **options: Any) -> Any:
    """Turn a typed function into a tool.

    Use as ``@tool``, ``@tool(loopback_name=None)`` (terminal tool) or ``@tool(timeout=2.0, retries=3)``
    (each attempt may take 2 s; up to 3 more attempts, with exponential backoff, after an exception or a
    timeout). ``retry=Retry(...)`` sets the whole policy; ``blocking=False`` marks a sync tool that returns at
    once (async runs then call it on the event loop); ``requires_approval=True``: the tool never runs without a
    decision (a run pauses before it, an ``approver=`` decides, or a durable run waits for a person; see
    :mod:`llamabot.tools.approval`); ``name=`` renames it. The options are those of
    :func:`build_tool`, which checks them. The function is returned unchanged except for three attributes:
    ``json_schema``, ``loopback_name`` and ``tool`` (the :class:`Tool`).
    """

    def decorate(f: F) -> F:
        description = build_tool(f, **options)
        f.tool = description  # type: ignore[attr-defined]
        f.json_schema = description.json_schema  # type: ignore[attr-defined]
        f.loopback_name = description.loopback_name  # type: ignore[attr-defined]
        return f

    if func is not None:
        return decorate(func)
    return decorate


def as_tool(obj: Any) -> Tool:
    """Accept a ``@tool``-decorated function or a :class:`Tool`; reject anything else with a clear error."""
    if isinstance(obj, Tool):
        return obj
    description = getattr(obj, "tool", None)
    if isinstance(description, Tool):
        return description
    raise ToolDefinitionError(
        f"{getattr(obj, '__name__', obj)!r} is not a tool; decorate it with @tool (from llamabot import tool)"
    )


def tools_by_name(items: Iterable[Any]) -> dict[str, Tool]:
    """``items`` (``@tool`` functions or :class:`Tool` objects, see :func:`as_tool`) by name, in order. Two
    different tools of one name are a :class:`ToolDefinitionError` (one would be dropped unsaid); the same tool
    given twice is kept once."""
    tools: dict[str, Tool] = {}
    for item in items:
        tool = as_tool(item)
        if (seen := tools.get(tool.name)) is not None and seen != tool:
            raise ToolDefinitionError(f"two different tools are named {tool.name!r}; rename one (@tool(name=...))")
        tools[tool.name] = tool
    return tools

