"""Prompts of the Atom of Thought planner. The reference convention and one worked example matter more than
the model (facts.md): with a one-sentence prompt every model wrote literal numbers instead of references."""

from __future__ import annotations

import json
from typing import Any

from llamabot.tools.tool import Tool

#: The opening both forms of plan share (the atom shape), and their closing (the final atom, the tools, the
#: expression example).
_OPENING = """You are a planner. You never compute anything yourself: you write a plan of atoms that a \
program executes exactly.
{reasoning}
Each atom is one step: {{"id": <int>, "kind": "tool" | "decision" | "final", "name": <tool>, "input": {{...}}, \
"dependsOn": [<ids>]}}.
"""
_CLOSING = """- The plan ends with exactly one atom {{"kind": "final", "name": "report", "dependsOn": [<id of the answer>]}}.

Tools:
{tools}
{decisions}
Example. Question: What is (15 + 7) * 3 - 10?
Plan: {example}
"""

PLANNER_PROMPT = _OPENING + """- A "tool" atom calls one tool with its inputs. A "decision" atom combines results of earlier atoms.
- To use the result of an earlier atom, write the string "<result_of_N>" (N is that atom's id) as the input \
value, and list N in "dependsOn". Never write a number that you computed in your head: only numbers that \
appear in the question may be written literally.
""" + _CLOSING

EXAMPLE_PLAN: dict[str, Any] = {
    "atoms": [
        {"id": 1, "kind": "tool", "name": "add", "input": {"a": 15, "b": 7}, "dependsOn": []},
        {"id": 2, "kind": "tool", "name": "multiply", "input": {"a": "<result_of_1>", "b": 3}, "dependsOn": [1]},
        {"id": 3, "kind": "tool", "name": "subtract", "input": {"a": "<result_of_2>", "b": 10}, "dependsOn": [2]},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
    ]
}

#: With sub-questions (``AoTBot(subquestions=True)``): each atom first says, in words, what it finds out.
QUESTIONS_PROMPT = """You are a planner. You never compute anything yourself: you break the question into small \
sub-questions, and each sub-question becomes one atom that a program executes exactly.
{reasoning}
Each atom is one step: {{"id": <int>, "question": <what this step finds = how, in words>, \
"kind": "tool" | "decision" | "final", "name": <tool>, "input": {{...}}, "dependsOn": [<ids>]}}.
- Read the question first: which quantities are given, and what is asked. Each step finds one new quantity \
from quantities in the question or found by earlier steps; the last step finds what is asked.
- A "tool" atom calls one tool with its inputs. A "decision" atom combines results of earlier atoms.
- To use the result of an earlier atom, write the string "<result_of_N>" (N is that atom's id) as the input \
value, and list N in "dependsOn". Never write a number that you computed in your head: only numbers that \
appear in the question may be written literally, and a sub-question never contains a computed number.
- The plan ends with exactly one atom {{"kind": "final", "name": "report", "dependsOn": [<id of the answer>]}}.

Tools:
{tools}
{decisions}
Example. Question: Each of 3 classes has 15 girls and 7 boys. 10 of the students are absent today. How many \
students are at school today?
Plan: {example}
"""

#: The worked example of ``QUESTIONS_PROMPT`` (the arithmetic of ``EXAMPLE_PLAN``, as a word problem written for
#: this prompt: not an item of any evaluation set).
QUESTIONS_EXAMPLE_PLAN: dict[str, Any] = {
    "atoms": [
        {"id": 1, "question": "students in one class = girls in a class + boys in a class", "kind": "tool", "name": "add",
         "input": {"a": 15, "b": 7}, "dependsOn": []},
        {"id": 2, "question": "students in the 3 classes = students in one class * 3", "kind": "tool", "name": "multiply",
         "input": {"a": "<result_of_1>", "b": 3}, "dependsOn": [1]},
        {"id": 3, "question": "students at school today = students in the 3 classes - absent students", "kind": "tool", "name": "subtract",
         "input": {"a": "<result_of_2>", "b": 10}, "dependsOn": [2]},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
    ]
}

#: With expressions (``AoTBot(expressions=True)``): atoms compute arithmetic expressions with ``calculate``.
EXPRESSIONS_PROMPT = _OPENING + """- A "calculate" atom finds one quantity: its expression says how that quantity follows from numbers in the \
question and results of earlier atoms, with + - * / and parentheses. The program computes it.
- To use the result of an earlier atom, write "<result_of_N>" (N is that atom's id) in the expression and list \
N in "dependsOn". Never write a number that you computed in your head: only numbers that appear in the \
question may be written literally.
- A question that is already an arithmetic expression is computed by one atom, the expression copied exactly.
""" + _CLOSING + """
Example. Question: Each of 3 classes has 15 girls and 7 boys. 10 of the students are absent today. How many \
students are at school today?
Plan: {word_example}
"""

#: The worked examples of ``EXPRESSIONS_PROMPT`` (the arithmetic of ``EXAMPLE_PLAN`` and of
#: ``QUESTIONS_EXAMPLE_PLAN``: written for this project, not items of any evaluation set).
EXPRESSION_EXAMPLE_PLAN: dict[str, Any] = {
    "atoms": [
        {"id": 1, "kind": "tool", "name": "calculate", "input": {"expression": "(15 + 7) * 3 - 10"}, "dependsOn": []},
        {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]},
    ]
}
EXPRESSION_WORD_EXAMPLE_PLAN: dict[str, Any] = {
    "atoms": [
        {"id": 1, "kind": "tool", "name": "calculate", "input": {"expression": "15 + 7"}, "dependsOn": []},
        {"id": 2, "kind": "tool", "name": "calculate", "input": {"expression": "<result_of_1> * 3"}, "dependsOn": [1]},
        {"id": 3, "kind": "tool", "name": "calculate", "input": {"expression": "<result_of_2> - 10"}, "dependsOn": [2]},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
    ]
}

#: With reasoning (``AoTBot(reasoning=True)``, the default): the plan opens with what is asked and how it follows
#: from the question's numbers, in words, before any atom (``Plan.reasoning``; the schema asks for it first).
REASONING_INSTRUCTION = """
First write "reasoning", in words: what the question asks for, and how it follows from the numbers in the \
question, naming what each number you use counts. Compute nothing there. Then write the atoms that compute it.
"""
#: The reasoning of each worked example: the expression example, then the word-problem example.
EXAMPLE_REASONING = "Asked: the value of the expression, computed as written."
WORD_EXAMPLE_REASONING = (
    "Asked: the students at school today. Students in one class = 15 girls + 7 boys; the students of the 3 classes "
    "= students in one class * 3; at school today = the students of the 3 classes - 10 absent students."
)

REPLAN_MESSAGE = """That plan is invalid:
{errors}
Write the whole plan again, fixing every problem."""


def resolve_expressions(expressions: bool | None, tools: Any, subquestions: bool) -> bool:
    """Whether a bot plans with expressions: as asked, else on exactly when it uses the default tools and no
    sub-questions. Both forms at once raise ``ValueError``."""
    if subquestions and expressions:
        raise ValueError("subquestions and expressions are two forms of plan: choose one")
    return (tools is None and not subquestions) if expressions is None else bool(expressions)


def describe_tool(tool: Tool) -> str:
    """One line per tool: ``- name(param: type, ...): description``."""
    properties = tool.parameters.get("properties", {})
    params = ", ".join(f"{name}: {_type_name(schema)}" for name, schema in properties.items())
    summary = tool.description.splitlines()[0] if tool.description else tool.name
    return f"- {tool.name}({params}): {summary}"


def _type_name(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if schema.get("type") == "array":
        return f"list of {_type_name(schema.get('items', {}))}"
    if "anyOf" in schema:
        return " | ".join(_type_name(s) for s in schema["anyOf"])
    return str(schema.get("type", "value"))


def _example(plan: dict[str, Any], reasoning: str | None) -> str:
    return json.dumps({"reasoning": reasoning, **plan} if reasoning else plan)


def planner_prompt(tools: dict[str, Tool], decisions: dict[str, Tool], *, questions: bool = False,
                   expressions: bool = False, reasoning: bool = False) -> str:
    """The planner's system prompt; ``questions``: the sub-question form (each atom starts with its question);
    ``expressions``: atoms compute expressions with ``calculate`` (which ``tools`` must hold); ``reasoning``: the
    plan opens with its reasoning in words (the examples too)."""
    opening = REASONING_INSTRUCTION if reasoning else ""
    said, word_said = (EXAMPLE_REASONING, WORD_EXAMPLE_REASONING) if reasoning else (None, None)
    decision_lines = ""
    if decisions:
        decision_lines = "\nDecisions (kind \"decision\"):\n" + "\n".join(describe_tool(t) for t in decisions.values()) + "\n"
    tool_lines = "\n".join(describe_tool(t) for t in tools.values())
    if expressions:
        return EXPRESSIONS_PROMPT.format(reasoning=opening, tools=tool_lines, decisions=decision_lines,
                                         example=_example(EXPRESSION_EXAMPLE_PLAN, said),
                                         word_example=_example(EXPRESSION_WORD_EXAMPLE_PLAN, word_said))
    if questions:
        template, example = QUESTIONS_PROMPT, _example(QUESTIONS_EXAMPLE_PLAN, word_said)
    else:
        template, example = PLANNER_PROMPT, _example(EXAMPLE_PLAN, said)
    return template.format(reasoning=opening, tools=tool_lines, decisions=decision_lines, example=example)

EXECUTION_FAILED_MESSAGE = """Running that plan failed: {failure}
Write the whole plan again so that every atom can run. Do not compute anything yourself."""
