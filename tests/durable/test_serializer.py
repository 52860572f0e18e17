"""The durable runs' JSON serializer: what it stores, what it refuses to store, what it refuses to load
(DUR-SEC-030..060)."""

from __future__ import annotations

import base64
import dataclasses
import importlib
import inspect
import json
import pickle
import pkgutil
import threading
from collections import deque
from fractions import Fraction

import pytest
from typer.testing import CliRunner

import llamabot
from llamabot import AgentBot, tool
from llamabot.agents.nodes import ToolExecutionError
from llamabot.durable import Durable, NotStorableError, RecordRefusedError, show_run
from llamabot.durable.errors import DurableError
from llamabot.durable.serializer import SERIALIZER, JsonSerializer
from llamabot.errors import LlamabotError
from llamabot.models.reply import ModelReply, ToolCallRequest, Usage
from llamabot.models.scripted import ScriptedModel, text, tool_call


def _again(value):  # noqa: ANN001, ANN202
    return SERIALIZER.deserialize(SERIALIZER.serialize(value))


@pytest.mark.parametrize("value", [
    "text", 42, 1.5, None, True, [1, "a"], {"k": {"n": [1, 2]}}, (1, "two"), {1: "int key"}, {"a", "b"},
    deque([1, 2], maxlen=3), Fraction(3, 4), float("inf"),
    {"args": ("tests.durable.agents:make_agent", "q", {"memory": []}), "kwargs": {}},  # a run's inputs
    ModelReply(content=None, tool_calls=(ToolCallRequest("c1", "add", '{"a": 1}'),), usage=Usage(3, 4, 0.5)),
    ("a tool's value", None), (None, ValueError("a tool's error")),
    {"waiting": True, "request": 1, "tool": "transfer", "arguments": {"amount": 5}},
])
def test_dur_sec_030_stored_values_come_back_equal_with_their_types(value):
    """DUR-SEC-030"""
    again = _again(value)
    if isinstance(value, tuple) and isinstance(value[1], Exception):
        assert type(again[1]) is ValueError and str(again[1]) == str(value[1])
    elif isinstance(value, float):
        assert again == value
    else:
        assert again == value and type(again) is type(value)
    assert json.loads(SERIALIZER.serialize(value))["llamabot"] == 1  # JSON text, never a pickle


@dataclasses.dataclass
class _Elsewhere:
    """A dataclass outside llamabot: not stored unless a bot lists it in ``state_classes``."""

    n: int


def test_dur_sec_040_what_json_cannot_hold_is_refused_when_stored_naming_where():
    """DUR-SEC-040"""
    with pytest.raises(NotStorableError, match=r"the value\['lock'\] cannot be stored.*_thread.lock"):
        SERIALIZER.serialize({"lock": threading.Lock()})
    with pytest.raises(NotStorableError, match="_Elsewhere may not be restored"):
        SERIALIZER.serialize([_Elsewhere(1)])
    allowing = JsonSerializer(lambda: (_Elsewhere,))
    assert allowing.deserialize(allowing.serialize([_Elsewhere(1)])) == [_Elsewhere(1)]


class _Pwn:
    def __reduce__(self):  # noqa: ANN204
        return eval, ("1/0",)


@pytest.mark.parametrize("text, why", [
    (base64.b64encode(pickle.dumps(_Pwn())).decode(), "not llamabot's JSON"),
    (pickle.dumps(_Pwn()).decode("latin-1"), "not llamabot's JSON"),
    ('{"a": 1}', "not a llamabot record"),
    ('{"llamabot": 1, "value": {"__llamabot__": "dataclass", "class": "subprocess:Popen", "fields": {}}}',
     "may not be restored"),
    ('{"llamabot": 1, "error": {"class": "os:system", "args": [], "attrs": {}}}', "not an exception class"),
    ('{"llamabot": 1, "error": {"class": "builtins:eval", "args": [], "attrs": {}}}', "not an exception class"),
    ('{"llamabot": 1, "error": {"class": "llamabot.errors:excerpt", "args": [], "attrs": {}}}',
     "not an exception class"),
    ('{"llamabot": 1, "error": {"class": "builtins:ValueError", "args": [], "attrs": {"__class__": 1}}}',
     "cannot set attribute"),
    ('{"llamabot": 1, "exec": "print(1)"}', "unknown kind"),
])
def test_dur_sec_050_records_that_are_not_llamabot_json_are_refused_with_a_typed_error(text, why):
    """DUR-SEC-050: nothing is evaluated, imported outside llamabot, or unpickled."""
    with pytest.raises(RecordRefusedError, match=why):
        SERIALIZER.deserialize(text)


def _all_error_classes() -> list[type[BaseException]]:
    for module in pkgutil.walk_packages(llamabot.__path__, "llamabot."):
        importlib.import_module(module.name)
    found, todo = [], [LlamabotError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: f"{c.__module__}:{c.__qualname__}")


_SAMPLES = {"str": "what was wrong", "int": 3, "float": 2.5, "bool": True, "list[str]": ["first", "second"],
            "type": dict, "BaseException": KeyError("inner"), "Exception": KeyError("inner")}


def _sample(parameter: inspect.Parameter) -> object:
    """A representative argument for ``parameter`` (by its annotation; anything else gets nested JSON data)."""
    annotation = str(parameter.annotation).replace("typing.", "")
    for name, value in _SAMPLES.items():
        if annotation == name or annotation.startswith(name + " |") or annotation.startswith(f"type[{name}"):
            return value
    if annotation.startswith("tuple"):
        return ("a", "b")
    return {"raw": [1, "two", None], "k": 1.5}


def _special() -> dict[str, object]:
    """Arguments for the errors whose parameters are llamabot objects."""
    from llamabot.agents.approval import PausedRun
    from llamabot.graph.checkpoint import Checkpoint
    from llamabot.models.reply import FailedAttempt
    from llamabot.observe.usage import RunUsage
    from llamabot.reasoning.aot.plan import Atom
    from llamabot.tools.approval import ApprovalRequest

    paused = PausedRun((ApprovalRequest("c1", "transfer", {"amount": 5}),), Checkpoint("decide", None, "{}"))
    return {
        "ApprovalRequired": (paused,),
        "UsageLimitExceeded": ("max_requests", 2, RunUsage(2, 100, 10)),
        "LWTReferenceError": ({"s2": ("s9",)}, ["s1", "s2"]),
        "AtomExecutionError": (Atom(id=1, kind="tool", name="add", input={"a": 1}), {"a": 1}, "boom", None),
        "ModelFallbackError": ((FailedAttempt("primary", "RateLimitError: 429"),),),
    }


def _build(cls: type[BaseException]) -> BaseException:
    special = _special().get(cls.__name__)
    if special is not None:
        return cls(*special)
    signature = inspect.signature(cls.__init__)
    params = [p for p in list(signature.parameters.values())[1:] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not params or all(p.name in ("args", "kwargs") for p in params):
        return cls(f"{cls.__name__} happened")
    return cls(*[_sample(p) for p in params if p.default is p.empty])


ERROR_CLASSES = _all_error_classes()


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__qualname__)
def test_dur_err_090_every_llamabot_error_round_trips_with_its_type_and_message(cls):
    """DUR-ERR-090: every exception class of llamabot (LlamabotError's subclasses, the durable errors among
    them), built with representative arguments, is read back with the same type, message and attributes that
    are data; pickling lost or broke some of them (a custom ``__init__``)."""
    error = _build(cls)
    again = _again(error)
    assert type(again) is cls and str(again) == str(error)
    for key, value in vars(error).items():
        if isinstance(value, (str, int, float, list, dict, tuple)) and not isinstance(value, BaseException):
            assert getattr(again, key) == value, key


def test_dur_err_090_the_walk_found_the_errors_of_every_layer():
    names = {cls.__name__ for cls in ERROR_CLASSES}
    assert {"ToolExecutionError", "ToolArgumentsError", "StructuredOutputError", "DependencyCycleError",
            "MCPServerError", "ToolRejectedError", "AlreadyDecidedError", "RecordRefusedError",
            "StateCodecError"} <= names
    assert len(ERROR_CLASSES) >= 40 and all(issubclass(c, LlamabotError) for c in ERROR_CLASSES)
    assert any(issubclass(c, DurableError) for c in ERROR_CLASSES)


def test_dur_err_090_an_error_of_another_library_is_stored_as_its_text():
    """An exception whose class may not be restored comes back as a RuntimeError naming it."""
    again = _again(json.JSONDecodeError("bad", "{x", 1))
    assert type(again) is RuntimeError and str(again).startswith("JSONDecodeError: bad")


@tool
def boom(n: int) -> str:
    """Always fails.

    Args:
        n: Anything.
    """
    raise OSError(f"disk {n} is gone")


def make_failing_agent() -> AgentBot:
    return AgentBot(tools=[boom], max_errors=1,
                    model=ScriptedModel([tool_call("boom", n=1), tool_call("boom", n=2), text("no")]))


def test_dur_err_090_runs_show_prints_the_error_of_a_failed_run(tmp_path):
    """DUR-ERR-090: a run that failed with ToolExecutionError (which pickle could not load) is shown readably;
    its result raises the same error from the database."""
    from llamabot.cli import app
    from llamabot.durable import wait_result

    agent = Durable(make_failing_agent, db=f"sqlite:///{tmp_path / 'r.sqlite'}")
    with pytest.raises(ToolExecutionError) as raised:
        agent.run("go", run_id="failed-1")
    assert show_run("failed-1", agent.db).error == f"ToolExecutionError: {raised.value}"
    with pytest.raises(ToolExecutionError) as again:
        wait_result("failed-1", agent.db)
    assert str(again.value) == str(raised.value) and again.value.tool == "boom"
    shown = CliRunner().invoke(app, ["runs", "show", "failed-1", "--db", agent.db])
    assert f"error: ToolExecutionError: {raised.value}" in " ".join(shown.output.split())  # rich wraps lines


def test_dur_sec_050_an_error_class_that_moved_restores_under_the_name_older_records_saved():
    """The embedded engine's errors left ``models.local.scheduler`` for ``models.local.request``: a record written
    before still reads back as the same class (``MOVED_CLASSES``)."""
    from llamabot.models.local.request import LocalBusyError

    text = SERIALIZER.serialize(LocalBusyError("queue full"))
    assert "llamabot.models.local.request:LocalBusyError" in text
    older = SERIALIZER.deserialize(text.replace("models.local.request:", "models.local.scheduler:"))
    assert type(older) is LocalBusyError and str(older) == "queue full"
