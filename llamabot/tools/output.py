"""Typed output: ``AgentBot(tools, output_type=Invoice)`` returns a validated ``Invoice``.

The run's answer is delivered, as always, through the terminal tool ``respond_to_user``; with an output type its
one argument, ``response``, is typed: its JSON schema is the type's, so the model sees exactly what to write, the
embedded model is grammar-constrained to it (its tool calls are, to their tools' schemas), and the arguments are
validated like any tool call's. An invalid answer is shown to the model as the call's error and it tries again,
at most ``max_errors`` times in a row; then the run raises :class:`~llamabot.errors.StructuredOutputError`.

Output types: a pydantic model, a dataclass, a ``TypedDict``, or any type pydantic validates (``int``,
``list[str]``, ``Literal[...]``, a union...). What is not a type is refused at construction (``TypeError``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_args, get_type_hints

from pydantic import BaseModel, PydanticSchemaGenerationError, PydanticUserError, TypeAdapter

from llamabot.errors import StructuredOutputError, excerpt
from llamabot.tools.tool import Tool, build_tool

RESPOND = "respond_to_user"


def output_tool(output_type: Any) -> Tool:
    """The terminal ``respond_to_user`` tool whose ``response`` is of ``output_type`` (checked: ``TypeError``
    when pydantic cannot validate it)."""
    adapter = output_adapter(output_type)

    def respond_to_user(response: Any) -> Any:
        return response

    respond_to_user.__annotations__ = {"response": output_type, "return": output_type}
    respond_to_user.__doc__ = (
        "Give the final answer to the user. Call this once you know the answer.\n\n"
        f"Args:\n    response: The final answer, exactly in the required structure ({type_name(output_type)}).\n"
    )
    respond_to_user.output_adapter = adapter  # type: ignore[attr-defined]
    respond_to_user.output_type = output_type  # type: ignore[attr-defined]
    return build_tool(respond_to_user, loopback_name=None, blocking=False)


def output_adapter(output_type: Any) -> TypeAdapter[Any]:
    """pydantic's validator of ``output_type``; ``TypeError`` naming the type when it cannot be one."""
    if output_type is None or isinstance(output_type, (str, bytes, int, float, bool)):
        raise TypeError(f"output_type must be a type (a pydantic model, a dataclass, a TypedDict, int, "
                        f"list[str]...), got {output_type!r}")
    try:
        return TypeAdapter(output_type)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        raise TypeError(f"output_type {type_name(output_type)} cannot be validated: {exc}") from None


def typed_output(tool: Tool | None) -> TypeAdapter[Any] | None:
    """The output validator of a typed ``respond_to_user`` (``None`` for any other tool)."""
    return getattr(tool.func, "output_adapter", None) if tool is not None else None


def checked_output(adapter: TypeAdapter[Any], value: Any, tool: str) -> Any:
    """``value`` (what a terminal tool returned) validated as the run's output; :class:`StructuredOutputError`
    when it is not one (a terminal tool other than ``respond_to_user`` returned something else)."""
    try:
        return adapter.validate_python(value)
    except ValueError as exc:
        raise StructuredOutputError(f"output of {tool!r}", 1, excerpt(value), [str(exc)]) from None


def output_classes(output_type: Any) -> tuple[type, ...]:
    """The classes a typed answer is made of (the output type itself, and the pydantic models and dataclasses
    inside it, through ``list[...]``, unions and fields): what a run's checkpoints may restore."""
    found: dict[type, None] = {}

    def visit(annotation: Any) -> None:
        for arg in get_args(annotation):
            visit(arg)
        if not isinstance(annotation, type) or annotation in found:
            return
        if issubclass(annotation, BaseModel):
            found[annotation] = None
            for field in annotation.model_fields.values():
                visit(field.annotation)
        elif dataclasses.is_dataclass(annotation):
            found[annotation] = None
            for hint in get_type_hints(annotation).values():
                visit(hint)

    visit(output_type)
    return tuple(found)


def type_name(output_type: Any) -> str:
    return getattr(output_type, "__name__", None) or repr(output_type)


__all__ = ["checked_output", "output_adapter", "output_classes", "output_tool", "typed_output"]
