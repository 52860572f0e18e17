"""Tool schema generation: a typed Python signature plus its docstring become a pydantic model and an
OpenAI-format JSON schema. Pure: no I/O, no model.

Rules (see docs/design/tools/tools-EARS.md):
- every visible parameter must be annotated, else :class:`ToolDefinitionError` at decoration time;
- parameters whose name starts with ``_`` are hidden from the model (the framework injects them), and so is a
  first parameter annotated ``RunContext[...]`` (see :mod:`llamabot.tools.context`);
- defaults are kept; ``Literal``/``Enum`` become ``enum``; ``list[int]`` has ``items``; nested pydantic models
  and ``Optional`` work (pydantic does the type mapping, we only tidy the result);
- parameter descriptions come from the docstring (Google, reST or NumPy style).
"""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_core import SchemaValidator

from llamabot.errors import ToolDefinitionError
from llamabot.tools.context import is_run_context


def fields_validator(model: type[BaseModel]) -> SchemaValidator | None:
    """pydantic-core's validator of ``model``'s fields alone: the validation that validating ``model`` runs, without
    making the model object (``validate_json`` gives ``(fields, extra, fields set)``; a third of the cost of a
    tool call's validation). ``None`` unless the model's core schema is a plain model of fields: no model
    validators, custom ``__init__`` or root model, and no definitions shared with the outside."""
    schema = getattr(model, "__pydantic_core_schema__", None)
    if not isinstance(schema, dict) or schema.get("type") != "model":
        return None
    if schema.get("custom_init") or schema.get("root_model") or schema.get("post_init"):
        return None
    fields = schema.get("schema")
    if not isinstance(fields, dict) or fields.get("type") != "model-fields":
        return None
    try:
        return SchemaValidator(fields, schema.get("config"))
    except Exception:  # noqa: BLE001 - e.g. references to definitions kept outside: the model's own validator then
        return None


def is_hidden(parameter_name: str) -> bool:
    """Hidden parameters (``_globals_dict``...) are injected by the framework and never shown to the model."""
    return parameter_name.startswith("_")


def arguments_model(func: Any, name: str) -> tuple[type[BaseModel], str]:
    """Build the pydantic model that validates ``func``'s visible arguments, and the tool description.

    Returns ``(model, description)``. Raises :class:`ToolDefinitionError` for a missing annotation or a
    ``*args``/``**kwargs`` parameter, naming the function and the parameter.
    """
    signature = inspect.signature(func)
    try:
        hints = get_type_hints(func, include_extras=True)
    except Exception as exc:  # unresolved forward references and the like
        raise ToolDefinitionError(f"tool {name!r}: cannot resolve type annotations: {exc}") from exc
    doc = docstring_parser.parse(inspect.getdoc(func) or "")
    param_docs = {p.arg_name: (p.description or "").strip() for p in doc.params}

    fields: dict[str, Any] = {}
    for pname, param in signature.parameters.items():
        if is_hidden(pname) or is_run_context(hints.get(pname)):
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {pname!r} is *args/**kwargs; a tool needs named, typed parameters"
            )
        if pname not in hints:
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {pname!r} has no type annotation; annotate it (e.g. `{pname}: str`) "
                "so the model knows what to send"
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        description = param_docs.get(pname) or None
        fields[pname] = (hints[pname], Field(default, description=description))

    description_parts = [doc.short_description or "", doc.long_description or ""]
    description = "\n\n".join(part.strip() for part in description_parts if part and part.strip())
    model = create_model(
        f"{name}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
        **fields,
    )
    return model, description or name.replace("_", " ")


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments: ``$ref`` inlined, pydantic's noise titles removed.

    Inlining keeps the schema readable for small models and for grammar compilers; a recursive model
    keeps its ``$defs`` (it cannot be inlined).
    """
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    recursive: set[str] = set()
    inlined = _inline_refs(schema, defs, stack=(), recursive=recursive)
    if recursive:
        inlined["$defs"] = {k: _strip_titles(v) for k, v in defs.items()}
    inlined = _strip_titles(inlined)
    inlined.setdefault("properties", {})
    inlined["type"] = "object"
    return inlined


def _inline_refs(node: Any, defs: dict[str, Any], stack: tuple[str, ...], recursive: set[str]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref.rsplit("/", 1)[-1]
            if key in stack:
                recursive.add(key)
                return node
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            target = _inline_refs(defs[key], defs, stack + (key,), recursive)
            return {**target, **_inline_refs(siblings, defs, stack, recursive)}
        return {k: _inline_refs(v, defs, stack, recursive) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, defs, stack, recursive) for v in node]
    return node


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's auto-generated ``title`` keys (they repeat the property names)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {prop: _strip_titles(sub) for prop, sub in value.items()}
            else:
                out[key] = _strip_titles(value)
        return out
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def function_schema(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI tool format: ``{"type": "function", "function": {name, description, parameters}}``."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}
