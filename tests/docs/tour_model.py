"""The scripted model the README tour runs on: one responder that answers every bot of the tour generically.

It reads the request, not the README: which bot asks is told by the request's shape (tools offered, a
``response_format`` and its schema name), and the question by the last user message.

- Arithmetic (``"What is 23 times 19?"``, ``"(2 + 3) * 7"``, ``"A baker made 24 cakes and 18 more, then sold
  25"``) is read into an expression (:func:`read_arithmetic`) and split into binary operations; an agent calls
  one calculator tool per operation (each operand is a number of the question or an earlier tool's result, read
  back from the tool message), then ``respond_to_user`` with the last result. An AoT plan has one atom per
  operation (``calculate`` atoms when the plan offers it, else ``add``/``multiply``/...).
- Other tool requests follow :data:`INTENTS` (a regular expression over the question and the tool call it
  asks for); else a tool of the user's that takes only text (a search, another agent made a tool with
  ``as_tool``) is asked the question once; else the agent answers with ``respond_to_user`` at once. The answer
  is the last tool result, or a value of the run's ``output_type`` schema when ``respond_to_user`` asks one (its
  numbers: the tool results, latest first; or, when the schema holds more numbers than there are results, the
  question's numbers and then the results, so ``{a, b, product}`` reads ``23, 19, 437``).
- Structured output (a JSON schema) is filled from the question: strings from its capitalised words in order,
  numbers from its numbers. ToT's game-of-24 schemas are answered by the Game-of-24 oracle of the ToT tests;
  ANoT's three phases by :func:`anot_reply`.
- Plain text: the value of the arithmetic, else a sentence naming the question.

To extend it for a new README section: add an :data:`INTENTS` entry for a new tool, or a branch in
:func:`respond` keyed on the new request's shape (its ``response_format`` name, or the tools it offers). Keep it
generic: it reads the request, so an assertion on what a block computed still means something.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from llamabot.models.reply import ModelReply, ModelRequest
from llamabot.models.scripted import ScriptedModel, json_reply, text, tool_call
from llamabot.tools.defaults import DEFAULT_TOOLS
from tests.reasoning.tot.helpers import game24_oracle

TERMINAL = "respond_to_user"
_DEFAULT_TOOLS = {t.__name__ for t in DEFAULT_TOOLS}  # every agent has them; the tour model calls only respond_to_user

#: Tool calls read from the question: (pattern, tool, arguments from the match). The first whose tool is offered
#: and whose pattern matches the last user message is called once; then the agent answers with its result.
INTENTS: list[tuple[str, str, Callable[[re.Match[str]], dict[str, Any]]]] = [
    (r"\bpay (?P<to>\w+) (?P<amount>\d+(?:\.\d+)?)", "pay",
     lambda m: {"amount": float(m["amount"]), "to": m["to"]}),
]

_WORDS = [  # word -> operator, checked in this order between two numbers of a word problem
    ("to the power", "**"), ("times", "*"), ("divided by", "/"), ("plus", "+"), ("minus", "-"),
    ("sold", "-"), ("gave", "-"), ("ate", "-"), ("lost", "-"), ("left", "-"), ("less", "-"),
    ("more", "+"), ("bought", "+"), ("and", "+"), ("each", "*"),
]
_OPERATORS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "power"}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def read_arithmetic(question: str) -> str | None:
    """The arithmetic a question asks for, as a Python expression, or ``None`` when it asks none.

    A written expression is taken as it is (after ``times``/``plus``/``to the power`` become operators); a word
    problem joins its numbers with the operator its words between them suggest (``and 18 more`` adds,
    ``sold 25`` subtracts)."""
    written = question.lower()
    for words, op in _WORDS[:5]:
        written = written.replace(words, f" {op} ")
    candidates = [c.strip() for c in re.findall(r"[\d.\s()+\-*/]+", written)]
    candidates = [c for c in candidates if _NUMBER.search(c) and re.search(r"[+\-*/]", c)]
    if candidates:
        expression = max(candidates, key=len)
        if _parses(expression):
            return expression
    numbers = list(_NUMBER.finditer(question))
    if len(numbers) < 2:
        return None
    expression = numbers[0].group()
    for before, number in zip(numbers, numbers[1:], strict=False):
        between = question[before.end():number.start()].lower()
        op = next((op for words, op in _WORDS if re.search(rf"\b{words}\b", between)), None)
        if op is None:
            return None
        expression = f"({expression}) {op} {number.group()}"
    return expression


def _parses(expression: str) -> bool:
    try:
        return bool(operations(expression))
    except ValueError:
        return False


_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|\*\*|[-+*/()])")


def operations(expression: str) -> list[tuple[str, Any, Any]]:
    """The expression's binary operations in the order they can be computed: ``(op, left, right)`` where an
    operand is a number or ``("result", k)``, the result of operation ``k``.

    A small recursive-descent parser: ``+ -`` below ``* /`` below a right-associative ``**``, and parentheses."""
    tokens, ops = _tokens(expression), []

    def binary(operand: Callable[[], Any], operators: tuple[str, ...]) -> Any:
        left = operand()
        while tokens and tokens[0] in operators:
            op = tokens.pop(0)
            ops.append((op, left, operand()))
            left = ("result", len(ops) - 1)
        return left

    def power() -> Any:
        base = atom()
        if tokens and tokens[0] == "**":
            tokens.pop(0)
            ops.append(("**", base, power()))
            return ("result", len(ops) - 1)
        return base

    def atom() -> Any:
        if not tokens:
            raise ValueError(f"not arithmetic: {expression!r}")
        token = tokens.pop(0)
        if token == "(":
            inner = binary(lambda: binary(power, ("*", "/")), ("+", "-"))
            if not tokens or tokens.pop(0) != ")":
                raise ValueError(f"unbalanced parentheses: {expression!r}")
            return inner
        if _NUMBER.fullmatch(token):
            return _number(token)
        raise ValueError(f"not arithmetic: {expression!r}")

    binary(lambda: binary(power, ("*", "/")), ("+", "-"))
    if tokens:
        raise ValueError(f"not arithmetic: {expression!r}")
    return ops


def _tokens(expression: str) -> list[str]:
    tokens, at = [], 0
    while at < len(expression.rstrip()):
        match = _TOKEN.match(expression, at)
        if match is None:
            raise ValueError(f"not arithmetic: {expression!r}")
        tokens.append(match[1])
        at = match.end()
    return tokens


def _value(expression: str) -> int | float:
    """The value of the question's arithmetic, computed from its operations."""
    apply = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
             "/": lambda a, b: a / b, "**": lambda a, b: a ** b}
    values: list[Any] = []
    for op, left, right in operations(expression):
        a, b = (values[v[1]] if isinstance(v, tuple) else v for v in (left, right))
        values.append(apply[op](a, b))
    value = values[-1]
    return int(value) if float(value).is_integer() else value


def _tool_names(request: ModelRequest) -> dict[str, dict[str, Any]]:
    return {t.get("function", t)["name"]: t.get("function", t) for t in request.tools or ()}


def _run_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The messages of the current run: those after the last user message."""
    last_user = max((i for i, m in enumerate(request.messages) if m.get("role") == "user"), default=-1)
    return request.messages[last_user + 1:]


def _number(value: Any) -> int | float:
    number = float(str(value).strip().strip('"'))
    return int(number) if number.is_integer() else number


def _params(tool: dict[str, Any]) -> list[str]:
    parameters = tool.get("parameters", {})
    return list(parameters.get("required") or parameters.get("properties", {}))


def agent_reply(request: ModelRequest) -> ModelReply:
    """The next tool call of an agent run (see the module docstring)."""
    tools = _tool_names(request)
    question = request.last_user_text
    results = [m.get("content") for m in _run_messages(request) if m.get("role") == "tool"]
    expression = read_arithmetic(question)
    if expression is not None:
        ops = operations(expression)
        if len(results) < len(ops):
            op, left, right = ops[len(results)]
            name = _OPERATORS[op]
            if name in tools:
                operand = lambda v: _number(results[v[1]]) if isinstance(v, tuple) else v  # noqa: E731
                a, b = _params(tools[name])[:2]
                return tool_call(name, {a: operand(left), b: operand(right)})
    if not results:
        for pattern, name, arguments in INTENTS:
            match = re.search(pattern, question, re.IGNORECASE)
            if match and name in tools:
                return tool_call(name, arguments(match))
        for name, tool in tools.items():  # a tool that takes text (search, another agent...): ask it the question
            properties = tool.get("parameters", {}).get("properties", {})
            if name not in _DEFAULT_TOOLS and properties and all(p.get("type") == "string" for p in properties.values()):
                return tool_call(name, {parameter: question for parameter in properties})
    if TERMINAL not in tools:
        raise ValueError(f"the tour model does not know how to end a run with the tools {sorted(tools)}: "
                         "add a branch to tests/docs/tour_model.py:respond")
    return tool_call(TERMINAL, response=final_response(tools[TERMINAL], results, question))


def final_response(terminal: dict[str, Any], results: list[Any], question: str) -> Any:
    """``respond_to_user``'s ``response``: the last tool result (or the answer to the question) as text, or, when
    the run has an ``output_type``, a value of its schema (numbers from the tool results, then the question)."""
    parameters = terminal.get("parameters", {})
    schema = parameters.get("properties", {}).get("response", {})
    if schema.get("type", "string") == "string" and "$ref" not in schema and "anyOf" not in schema:
        return str(results[-1]) if results else answer_text(question)
    defs = parameters.get("$defs", {})
    numbers = [str(r) for r in results if _NUMBER.fullmatch(str(r).strip())][::-1]
    asked = _NUMBER.findall(question)
    if numbers and _number_slots(schema, defs) > len(numbers):  # room for the inputs too: they come first
        numbers = [*asked, *numbers[::-1]]
    return fill(schema, question, numbers, defs)


def _number_slots(schema: dict[str, Any], defs: dict[str, Any]) -> int:
    """How many numbers a value of ``schema`` holds (an array counts one item)."""
    if "$ref" in schema:
        return _number_slots(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        return max(_number_slots(option, defs) for option in schema["anyOf"])
    if schema.get("type") == "object":
        return sum(_number_slots(prop, defs) for prop in schema.get("properties", {}).values())
    if schema.get("type") == "array":
        return _number_slots(schema.get("items", {}), defs)
    return int(schema.get("type") in ("integer", "number"))


def answer_text(question: str) -> str:
    """A plain-text answer: the value of the question's arithmetic, else a sentence naming the question."""
    expression = read_arithmetic(question)
    if expression is not None:
        return str(_value(expression))
    return f"A scripted answer to: {question}"


def plan_reply(request: ModelRequest) -> ModelReply:
    """An AoT plan for the question's arithmetic: one atom per operation, then the final ``report`` atom."""
    schema = request.response_format["json_schema"]["schema"]
    variants = schema["properties"]["atoms"]["items"]["anyOf"]
    tools = {v["properties"]["name"]["const"]: v for v in variants if v["properties"]["kind"]["const"] == "tool"}
    asks = any("question" in v["properties"] for v in variants)
    expression = read_arithmetic(request.last_user_text)
    if expression is None:
        raise ValueError(f"the tour model plans arithmetic only: {request.last_user_text!r}")
    atoms = []
    for index, (op, left, right) in enumerate(operations(expression), start=1):
        operand = lambda v: f"<result_of_{v[1] + 1}>" if isinstance(v, tuple) else v  # noqa: E731
        depends = [v[1] + 1 for v in (left, right) if isinstance(v, tuple)]
        if "calculate" in tools:
            name, arguments = "calculate", {"expression": f"{operand(left)} {op} {operand(right)}"}
        else:
            name = _OPERATORS[op]
            a, b = tools[name]["properties"]["input"]["required"][:2]
            arguments = {a: operand(left), b: operand(right)}
        atom = {"id": index, "kind": "tool", "name": name, "input": arguments, "dependsOn": depends}
        if asks:
            atom["question"] = f"step {index}: {op}"
        atoms.append(atom)
    atoms.append({"id": len(atoms) + 1, "kind": "final", "name": "report", "dependsOn": [len(atoms)]})
    return json_reply({"atoms": atoms})


def fill(schema: dict[str, Any], question: str, numbers: list[str] = (), defs: dict[str, Any] | None = None) -> Any:
    """A value of a JSON ``schema`` read from the question: its capitalised words fill the strings in order,
    ``numbers`` and then its own numbers the numbers. ``defs``: the ``$defs`` its ``$ref``s point to (the
    schema's own when absent)."""
    defs = {**schema.get("$defs", {}), **(defs or {})}
    words = iter(re.findall(r"\b[A-Z][a-zA-Z]+\b", question))
    found = iter([*numbers, *_NUMBER.findall(question)])

    def value(sub: dict[str, Any]) -> Any:
        if "$ref" in sub:
            return value(defs[sub["$ref"].rsplit("/", 1)[-1]])
        if "anyOf" in sub:
            return value(next((o for o in sub["anyOf"] if o.get("type") != "null"), sub["anyOf"][0]))
        if "const" in sub or "enum" in sub:
            return sub.get("const", (sub.get("enum") or [None])[0])
        kind = sub.get("type")
        if kind == "object":
            return {name: value(prop) for name, prop in sub.get("properties", {}).items()}
        if kind == "array":
            return [value(sub.get("items", {}))]
        if kind in ("integer", "number"):
            number = _number(next(found, "0"))
            return int(number) if kind == "integer" else number
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return next(words, "unknown")

    return value(schema)


def anot_reply(request: ModelRequest) -> ModelReply:
    """ANoT, by phase: the strategy (one ``ATTR`` condition per schema field a word of the request names, all
    ANDed), the LWT script (``done`` at once: the draft compiled from the strategy is kept), and each step of
    the script (see :func:`anot_step`)."""
    if request.response_format:
        prompt = request.last_user_text
        wanted = re.search(r"^Request: (.*)$", prompt, re.MULTILINE)[1]
        words = re.findall(r"[A-Za-z]+", wanted)
        conditions = []
        for field_line in re.findall(r"^(\S.*?): (\w+) e\.g\. (.*)$", prompt, re.MULTILINE):
            path, kind, example = field_line
            head, _, names = path.partition("{")
            for name in (n.strip() for n in names.rstrip("}").split(",")) if names else [path.rsplit(".", 1)[-1]]:
                full = head + name if names else path
                named = [i for i, w in enumerate(words) if len(w) > 2 and w.lower() in name.lower()]
                if named:
                    expected = "True" if kind == "bool" else (words[named[0] - 1] if named[0] else example)
                    conditions.append({"id": len(conditions) + 1, "request_words": words[named[0]],
                                       "path": full, "expected": expected, "type": "ATTR"})
        total = int(re.search(r"Number of items: (\d+)", prompt)[1])
        logic = f"AND({', '.join(str(c['id']) for c in conditions)})"
        return json_reply({"conditions": conditions, "logic": logic, "total_items": total, "message": wanted})
    if request.tools:
        return tool_call("done")
    return text(anot_step(request.last_user_text))


def anot_step(step: str) -> str:
    """One LWT step: a condition check (``WiFi: 1=free, 2=no. Which are free?`` -> ``[1]``), or the final
    ranking (``c1=[1], c2=[1, 2] ... Rank the 2 items`` -> the items by conditions met, most first)."""
    asked = re.search(r"Which are (.+?)\?", step)
    if asked:
        values = re.findall(r"(\d+)=([^,.]+)", step.split("Which are")[0])
        return str([int(i) for i, v in values if v.strip().lower() == asked[1].strip().lower()])
    ranked = re.search(r"Rank the (\d+) items", step)
    if ranked:
        met = [json.loads(found) for found in re.findall(r"c\d+=(\[[\d, ]*\])", step)]
        items = range(1, int(ranked[1]) + 1)
        return str(sorted(items, key=lambda i: (-sum(i in m for m in met), i))[:5])
    return "[]"


def respond(request: ModelRequest) -> Any:
    """The tour model's answer to any request (see the module docstring for the dispatch)."""
    response_format = request.response_format
    if response_format:
        name = response_format.get("json_schema", {}).get("name", "")
        if name == "Plan":
            return plan_reply(request)
        if name.startswith("tot_"):
            return game24_oracle(request)
        if name == "Strategy":
            return anot_reply(request)
        return json_reply(fill(response_format["json_schema"]["schema"], request.last_user_text))
    if request.tools:
        if "lwt_list" in _tool_names(request):
            return anot_reply(request)
        return agent_reply(request)
    if "Rank the" in request.last_user_text or "Which are" in request.last_user_text:
        return anot_reply(request)
    return text(answer_text(request.last_user_text))


def tour_model(name: str = "tour") -> ScriptedModel:
    """A scripted model answering every request with :func:`respond`."""
    return ScriptedModel(responder=respond, name=name)
