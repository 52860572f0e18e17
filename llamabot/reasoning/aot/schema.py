"""The JSON schema of a plan, generated from the registered tools. Pure.

``name`` is constrained to the tool (or decision) names; each atom's ``input`` follows that tool's argument
schema, where every value may also be a ``"<result_of_N>"`` reference. The embedded model generates plans
under a grammar compiled from this schema (so a plan always parses); remote models get it as
``response_format``.
"""

from __future__ import annotations

from typing import Any

from llamabot.reasoning.aot.plan import QUESTION_MAX_LENGTH, REASONING_MAX_LENGTH
from llamabot.tools.tool import Tool

REFERENCE_SCHEMA: dict[str, Any] = {"type": "string", "pattern": "^<result_of_[0-9]+>$"}
FINAL_NAME = "report"
#: The most atoms a plan may have: the schema's ``maxItems``, enforced again by ``validate_plan`` (a model
#: without a grammar may ignore the schema).
MAX_ATOMS = 32
#: How deeply an atom's input may nest lists and objects (enforced by ``validate_plan``).
MAX_INPUT_DEPTH = 16
#: An atom's sub-question (``plan_schema(..., questions=True)``): words, bounded.
QUESTION_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": QUESTION_MAX_LENGTH}
#: A plan's opening reasoning (``plan_schema(..., reasoning=True)``): words, bounded, before the atoms.
REASONING_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": REASONING_MAX_LENGTH}


def _with_references(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter schema in which a value (or a list element) may be a reference instead."""
    schema = {k: v for k, v in schema.items() if k not in ("description", "default", "title")}
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema = {**schema, "items": _with_references(schema["items"])}
    return {"anyOf": [schema, REFERENCE_SCHEMA]}


def _atom_variant(kind: str, tool: Tool, questions: bool = False) -> dict[str, Any]:
    parameters = tool.parameters
    properties = {name: _with_references(sub) for name, sub in parameters.get("properties", {}).items()}
    asked: dict[str, Any] = {"question": QUESTION_SCHEMA} if questions else {}
    return {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            **asked,  # before the tool: the model says what the step finds out, then how
            "kind": {"const": kind},
            "name": {"const": tool.name},
            "input": {
                "type": "object",
                "properties": properties,
                "required": list(parameters.get("required", [])),
                "additionalProperties": False,
            },
            "dependsOn": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["id", *asked, "kind", "name", "input", "dependsOn"],
        "additionalProperties": False,
    }


FINAL_VARIANT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "kind": {"const": "final"},
        "name": {"const": FINAL_NAME},
        "dependsOn": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
    },
    "required": ["id", "kind", "name", "dependsOn"],
    "additionalProperties": False,
}


def plan_schema(tools: dict[str, Tool], decisions: dict[str, Tool] | None = None,
                max_atoms: int = MAX_ATOMS, *, questions: bool = False, reasoning: bool = False) -> dict[str, Any]:
    """The JSON schema of a plan over these tools and decisions; with ``questions``, every tool and decision atom
    starts with the sub-question it answers (``question``, in words); with ``reasoning``, the plan starts with
    its reasoning (``reasoning``, in words), so a model generating in order writes it before any atom."""
    variants = [_atom_variant("tool", t, questions) for t in tools.values()]
    variants += [_atom_variant("decision", t, questions) for t in (decisions or {}).values()]
    variants.append(FINAL_VARIANT)
    said: dict[str, Any] = {"reasoning": REASONING_SCHEMA} if reasoning else {}
    return {
        "type": "object",
        "properties": {
            **said,
            "atoms": {"type": "array", "items": {"anyOf": variants}, "minItems": 1, "maxItems": max_atoms},
        },
        "required": [*said, "atoms"],
        "additionalProperties": False,
    }


def plan_response_format(tools: dict[str, Tool], decisions: dict[str, Tool] | None = None, *,
                         questions: bool = False, reasoning: bool = False) -> dict[str, Any]:
    """``response_format`` asking for a plan (enforced by grammar on the embedded model)."""
    schema = plan_schema(tools, decisions, questions=questions, reasoning=reasoning)
    return {"type": "json_schema", "json_schema": {"name": "Plan", "schema": schema}}
