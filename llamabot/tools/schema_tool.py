"""Schema-first tools: a tool described by a JSON schema someone else wrote (an MCP server's ``inputSchema``),
not by a Python signature.

The schema is used as it is: it is what the model sees, and the model's arguments are checked against it with
``jsonschema`` (the draft the schema names, 2020-12 by default; ``$ref``/``$defs``, ``enum``, ``minimum``... all
hold; every ``$ref`` must resolve within the schema, and patterns are matched under a time budget:
:mod:`llamabot.tools.schema_checks`). A :class:`Tool` made here runs through the same call logic as any ``@tool`` (timeouts, retries, errors shown
to the model); its ``arguments`` model only lists the top-level properties (every annotation ``Any``), for the code
that reads a tool's parameter names (AoT's plan validation).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, create_model
from referencing.exceptions import Unresolvable

from llamabot.errors import ToolDefinitionError, excerpt
from llamabot.tools.schema import function_schema
from llamabot.tools.schema_checks import bounded, pattern_budget, schema_problems
from llamabot.tools.tool import Tool, call_policy

#: What an OpenAI-compatible provider accepts as a function name.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

#: How many problems one failed check reports, and how long each may be (the model reads them).
MAX_PROBLEMS = 10
PROBLEM_CHARS = 300


class ArgumentSchema:
    """The arguments of a tool as a JSON schema: ``check(arguments)`` returns every problem found, as
    ``"path: message"`` lines (``[]`` when the arguments conform). The validator is compiled once."""

    __slots__ = ("tool", "schema", "_validator")

    def __init__(self, tool: str, schema: Any):
        if not isinstance(schema, dict):
            raise ToolDefinitionError(
                f"tool {tool!r}: the parameters schema must be a JSON object, got {excerpt(schema)}"
            )
        if schema.get("type", "object") != "object":
            raise ToolDefinitionError(
                f'tool {tool!r}: the parameters schema must describe an object ("type": "object"), '
                f"got type {schema.get('type')!r}"
            )
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            validator_class.check_schema(schema)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.path) or "(top level)"
            raise ToolDefinitionError(
                f"tool {tool!r}: invalid parameters schema at {where}: {exc.message}"
            ) from exc
        problems = schema_problems(schema, validator_class)
        if problems:
            raise ToolDefinitionError(
                f"tool {tool!r}: the parameters schema cannot be used: {'; '.join(problems[:MAX_PROBLEMS])}"
            )
        self.tool, self.schema = tool, schema
        self._validator = bounded(validator_class)(schema)

    def __call__(self, arguments: dict[str, Any]) -> list[str]:
        try:
            with pattern_budget():
                errors = sorted(
                    self._validator.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path))
                )
        except RecursionError:
            return ["arguments are nested too deeply"]
        except Unresolvable as exc:  # refs are checked at load time; this is the net under that check
            raise ToolDefinitionError(
                f"tool {self.tool!r}: the parameters schema has a $ref that does not resolve ({exc})"
            ) from None
        problems = []
        for error in errors[:MAX_PROBLEMS]:
            where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
            message = (
                error.message
                if len(error.message) <= PROBLEM_CHARS
                else error.message[:PROBLEM_CHARS] + "..."
            )
            problems.append(f"{where}: {message}")
        if len(errors) > MAX_PROBLEMS:
            problems.append(f"... and {len(errors) - MAX_PROBLEMS} more")
        return problems


def schema_tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    *,
    func: Callable[..., Any] | None = None,
    afunc: Callable[..., Awaitable[Any]] | None = None,
    **options: Any,
) -> Tool:
    """A :class:`Tool` named ``name`` whose arguments are described by the JSON schema ``parameters``, as given.

    ``func`` receives the checked arguments as keywords (the schema's property names); ``afunc``, a coroutine
    function, is what async runs await instead. Give one or both: with only ``afunc`` the tool is async (like an
    ``async def`` ``@tool``); with both, sync runs call ``func`` and async runs await ``afunc``. The other options
    (``loopback_name``, ``timeout``, ``retries``/``retry``, ``blocking``, ``requires_approval``) are
    :func:`llamabot.tools.tool.call_policy`'s. Raises :class:`ToolDefinitionError` naming the tool for a bad
    name, a schema that is not a valid JSON schema of an object, or no function.
    """
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise ToolDefinitionError(f"tool name {excerpt(name)} must be 1-64 letters, digits, '_' or '-'")
    if not isinstance(description, str):
        raise ToolDefinitionError(
            f"tool {name!r}: the description must be a string, got {type(description).__name__}"
        )
    check = ArgumentSchema(name, parameters)
    if func is None and afunc is None:
        raise ToolDefinitionError(f"tool {name!r}: give func= (sync), afunc= (async) or both")
    for given, label in ((func, "func"), (afunc, "afunc")):
        if given is not None and not callable(given):
            raise ToolDefinitionError(f"tool {name!r}: {label} must be callable, got {type(given).__name__}")
    if afunc is not None and not inspect.iscoroutinefunction(afunc):
        raise ToolDefinitionError(f"tool {name!r}: afunc must be a coroutine function (async def)")
    if func is None:
        func, afunc = afunc, None
    return Tool(
        name=name,
        description=description,
        func=func,
        arguments=_arguments_model(name, parameters),
        json_schema=function_schema(name, description, parameters),
        hidden=(),
        is_async=inspect.iscoroutinefunction(func),
        afunc=afunc,
        schema_check=check,
        **call_policy(name, **options),
    )


def _arguments_model(name: str, parameters: dict[str, Any]) -> type[BaseModel]:
    """The top-level properties as a pydantic model (every annotation ``Any``; required as the schema says)."""
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    fields: dict[str, Any] = {prop: (Any, ... if prop in required else None) for prop in properties}
    try:
        model = create_model(f"{name}Arguments", __config__=ConfigDict(extra="allow"), **fields)
    except (NameError, TypeError, ValueError) as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: cannot list the schema's properties {sorted(properties)}: {exc}"
        ) from exc
    dropped = sorted(set(properties) - set(model.model_fields))  # pydantic keeps "_x" names private
    if dropped:
        raise ToolDefinitionError(
            f"tool {name!r}: cannot list the schema's properties {dropped} (a name may not start with '_')"
        )
    return model
