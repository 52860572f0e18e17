"""The run-state codec: tagged JSON that restores run state exactly (AGT-STATE-010) and refuses what is not
data or may not be restored (AGT-STATE-020)."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import math
import pkgutil
import threading
from collections import OrderedDict, defaultdict, deque
from dataclasses import dataclass, field
from enum import Enum, Flag, IntEnum
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from llamabot.errors import LlamabotError
from llamabot.graph.codec import TAG, StateCodecError, decode_state, dumps_state, encode_state, loads_state

# -- classes a caller might keep in its state (outside llamabot, so passed in ``allowed=``) ----------------


class Colour(Enum):
    RED = "red"
    GREEN = "green"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Perm(Flag):
    R = 1
    W = 2
    X = 4


@dataclass(slots=True)
class Point:
    x: int
    y: float = 0.0


@dataclass(frozen=True)
class Label:
    text: str
    tags: tuple[str, ...] = ()


@dataclass
class Box:
    items: list[Any] = field(default_factory=list)
    meta: dict[Any, Any] = field(default_factory=dict)
    label: Label | None = None
    count: int = field(init=False, default=0)


@dataclass(frozen=True, slots=True)
class Derived:
    base: int
    double: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "double", self.base * 2)


class Note(BaseModel):
    text: str
    score: float | None = None
    tags: list[Any] = Field(default_factory=list)
    payload: Any = None


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    _secret: int = PrivateAttr(default=0)


class Aliased(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    depends_on: list[int] = Field(default_factory=list, alias="dependsOn")
    retries: int | None = None


ALLOWED = (Colour, Level, Perm, Point, Label, Box, Derived, Note, Loose, Aliased)


def shape(value: Any) -> Any:
    """A hashable picture of ``value`` that tells apart what ``==`` does not: 1 / 1.0 / True, a tuple / a
    list, a set / a frozenset, -0.0 / 0.0, dict order, a deque's maxlen, a model's fields set, extras and
    private attributes."""
    kind = type(value)
    if kind is float:
        return kind, repr(value)
    if kind in (list, tuple, deque):
        return kind, getattr(value, "maxlen", None), tuple(shape(item) for item in value)
    if kind is dict:
        return kind, tuple((shape(k), shape(v)) for k, v in value.items())
    if kind in (set, frozenset):
        return kind, frozenset(shape(item) for item in value)
    if isinstance(value, Enum):
        return kind, shape(value.value)
    if dataclasses.is_dataclass(value):
        names = [f.name for f in dataclasses.fields(value)] + sorted(getattr(value, "__dict__", {}))
        return kind, tuple((name, shape(getattr(value, name))) for name in dict.fromkeys(names))
    if isinstance(value, BaseModel):
        return (kind, shape(dict(value.__dict__)), frozenset(value.model_fields_set),
                shape(value.__pydantic_extra__), shape(value.__pydantic_private__))
    return kind, value


def round_trip(value: Any, allowed: tuple[type, ...] = ALLOWED) -> Any:
    """Through real JSON text, as a durable run would save and load it."""
    return decode_state(json.loads(json.dumps(encode_state(value, allowed=allowed))), allowed=allowed)


def assert_restored(value: Any, allowed: tuple[type, ...] = ALLOWED) -> Any:
    restored = round_trip(value, allowed)
    assert restored == value
    assert shape(restored) == shape(value)
    return restored


def refusal(call, *args, **kwargs) -> StateCodecError:
    with pytest.raises(StateCodecError) as info:
        call(*args, **kwargs)
    return info.value


# -- property tests -----------------------------------------------------------------------------------------

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(max_size=8)  # never the 12-character tag key by chance: it is drawn on purpose below
scalars = st.one_of(st.none(), st.booleans(), st.integers(), finite_floats, texts)
hashable_leaves = st.one_of(scalars, st.fractions(), st.sampled_from(Colour), st.sampled_from(Level))
labels = st.builds(Label, texts, st.lists(texts, max_size=2).map(tuple))
hashables = st.recursive(
    hashable_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(tuple),
        st.frozensets(inner, max_size=3),
        labels,
        st.builds(Derived, st.integers()),
    ),
    max_leaves=6,
)


def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    small = st.lists(inner, max_size=4)
    return st.one_of(
        small,
        small.map(tuple),
        small.map(deque),
        st.builds(deque, small, st.integers(0, 3)),
        st.dictionaries(st.one_of(texts, st.just(TAG)), inner, max_size=4),
        st.dictionaries(hashables, inner, max_size=4),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        st.builds(Point, st.integers(), finite_floats),
        st.builds(Box, small, st.dictionaries(hashables, inner, max_size=3), st.none() | labels),
        st.builds(Note, text=texts, score=st.none() | finite_floats, tags=small, payload=inner),
    )


values = st.recursive(hashables | st.sampled_from([Perm.W, Perm.R | Perm.X]), containers, max_leaves=25)
plain_json = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_agt_state_010_any_nested_data_round_trips_through_json_with_its_types(value):
    assert_restored(value)


@settings(deadline=None)
@given(values)
def test_agt_state_010_saving_is_deterministic_and_saving_a_restored_state_gives_the_same_text(value):
    text = dumps_state(value, allowed=ALLOWED)
    assert dumps_state(value, allowed=ALLOWED) == text
    assert dumps_state(loads_state(text, allowed=ALLOWED), allowed=ALLOWED) == text


@settings(deadline=None)
@given(plain_json)
def test_agt_state_010_plain_json_values_are_saved_as_themselves(value):
    encoded = encode_state(value)
    assert json.dumps(encoded) == json.dumps(value)


# -- round trips of particular types ------------------------------------------------------------------------


def test_agt_state_010_a_tuple_a_deque_a_set_and_int_dict_keys_keep_their_types():
    state = {
        "path": ("n0", "n1"),
        "queue": deque([1, 2], maxlen=5),
        "seen": {"a"},
        "atoms": {1: "ok", 2: "failed"},
    }
    encoded = encode_state(state)
    assert encoded == {
        "path": {TAG: "tuple", "items": ["n0", "n1"]},
        "queue": {TAG: "deque", "items": [1, 2], "maxlen": 5},
        "seen": {TAG: "set", "items": ["a"]},
        "atoms": {TAG: "dict", "items": [[1, "ok"], [2, "failed"]]},
    }
    assert shape(round_trip(state)) == shape(state)


def test_agt_state_010_a_user_dict_holding_the_tag_key_is_escaped_and_restored_as_a_plain_dict():
    state = {"note": {TAG: "tuple", "items": [1]}}
    assert encode_state(state)["note"] == {TAG: "dict", "items": [[TAG, "tuple"], ["items", [1]]]}
    assert shape(round_trip(state)) == shape(state)


def test_agt_state_010_nan_and_infinities_round_trip_as_tags_in_strict_json():
    state = {"scores": [math.nan, math.inf, -math.inf, -0.0, 1.5]}
    text = dumps_state(state)
    json.loads(text, parse_constant=lambda name: pytest.fail(f"non-standard JSON constant {name}"))
    scores = loads_state(text)["scores"]
    assert math.isnan(scores[0]) and scores[1:3] == [math.inf, -math.inf]
    assert [repr(s) for s in scores[3:]] == ["-0.0", "1.5"]


def test_agt_state_010_a_fraction_round_trips_exactly():
    assert encode_state(Fraction(-22, 7)) == {TAG: "fraction", "value": "-22/7"}
    assert_restored([Fraction(1, 3), Fraction(24)])


def test_agt_state_010_enum_members_stay_members_of_their_class():
    from llamabot.reasoning.tot.machine import Status

    restored = assert_restored([Status.EVALUATING, Level.HIGH, Colour.RED, Perm.R | Perm.X])
    assert restored[0] is Status.EVALUATING and restored[1] is Level.HIGH
    assert encode_state(Status.EVALUATING)["name"] == "EVALUATING"


def test_agt_state_010_a_dataclass_keeps_init_false_fields_changed_after_construction():
    box = Box([1, (2, 3)], {1: Label("x", ("a",))}, Label("top"))
    box.count = 7  # not an __init__ argument: restored by setting it
    derived = Derived(5)
    object.__setattr__(derived, "double", 11)  # frozen, slots, and no longer what __post_init__ computes
    restored_box, restored_derived = assert_restored([box, derived])
    assert restored_box.count == 7 and restored_derived.double == 11


def test_agt_state_010_a_dataclass_keeps_attributes_that_are_not_fields():
    box = Box()
    box.cache = {"hits": (1, 2)}  # type: ignore[attr-defined]
    assert round_trip(box).cache == {"hits": (1, 2)}


def test_agt_state_010_a_pydantic_model_keeps_its_class_aliases_fields_set_extras_and_private_attributes():
    aliased = Aliased.model_validate({"dependsOn": [1, 2]})
    loose = Loose(name="n", colour=Colour.RED, extra_tuple=(1, 2))
    loose._secret = 42
    restored_aliased, restored_loose = assert_restored([aliased, loose])
    assert restored_aliased.model_dump(by_alias=True, exclude_unset=True) == {"dependsOn": [1, 2]}
    assert restored_loose.extra_tuple == (1, 2) and restored_loose._secret == 42


def test_agt_state_010_a_pydantic_model_is_restored_without_rerunning_its_validators():
    note = Note(text="t", payload={"values": (1, 2)})
    note.score = "not a float"  # models do not validate on assignment by default: kept exactly as it is
    assert round_trip(note).score == "not a float"


# -- real llamabot state ------------------------------------------------------------------------------------


def test_agt_state_010_the_agent_run_state_with_its_pending_calls_round_trips():
    from llamabot.agents.agent_state import PendingCall, new_run_state
    from llamabot.models.messages import assistant, system, tool_result
    from llamabot.models.reply import ToolCallRequest

    state = new_run_state("what is 2 + 3?", memory=[system("be brief")])
    call = ToolCallRequest("call_1", "add", '{"a": 2, "b": 3}')
    state["memory"] += [assistant(None, (call,)), tool_result("call_1", "add", 5)]
    state["func_call"] = PendingCall("call_2", "respond_to_user", {"text": "5"}, '{"text": "5"}', True)
    state["_pending"] = [PendingCall("call_3", "add", {"a": (1, 2), "b": 3}, "{}")]
    state["iteration_count"] = 2
    restored = assert_restored(state, ())
    assert type(restored["func_call"]) is PendingCall and restored["_pending"][0].arguments["a"] == (1, 2)


SEED_PLAN = {"atoms": [
    {"id": 1, "kind": "tool", "name": "add", "input": {"a": 15, "b": 7}},
    {"id": 2, "kind": "tool", "name": "multiply", "input": {"a": "<result_of_1>", "b": 3}, "dependsOn": [1]},
    {"id": 3, "kind": "tool", "name": "subtract", "input": {"a": "<result_of_2>", "b": 10}, "dependsOn": [2]},
    {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
]}


def test_agt_state_010_an_aot_plan_round_trips_as_the_same_pydantic_classes():
    from llamabot.reasoning.aot.plan import Atom, Plan

    plan = Plan.model_validate(SEED_PLAN)
    restored = assert_restored({"plan": plan}, ())["plan"]
    assert type(restored) is Plan and all(type(atom) is Atom for atom in restored.atoms)
    assert restored.to_dict() == plan.to_dict() == Plan.load(SEED_PLAN).to_dict()


def test_agt_state_010_an_aot_execution_record_round_trips_with_int_keyed_atom_records():
    from llamabot.reasoning.aot.execute import execute_plan
    from llamabot.reasoning.aot.plan import Plan
    from llamabot.reasoning.aot.record import AtomRecord, ExecutionRecord
    from llamabot.toolkits.calculator import CALCULATOR_TOOLS

    record = execute_plan(Plan.model_validate(SEED_PLAN), {t.tool.name: t.tool for t in CALCULATOR_TOOLS})
    assert record.answer == 56
    restored = assert_restored({"record": record}, ())["record"]
    assert type(restored) is ExecutionRecord and list(restored.atoms) == [1, 2, 3, 4]
    assert all(type(r) is AtomRecord for r in restored.atoms.values())
    assert restored.results == record.results


def _tot_evaluating():
    from llamabot.reasoning.tot.machine import Env, new_machine, update
    from llamabot.reasoning.tot.messages import Start, ThoughtsGenerated

    machine, directives = update(
        new_machine(branching_factor=2, max_depth=2, min_depth=1, early_success_threshold=0.95),
        Start("use 4 6 1 1 to make 24", "run"), Env(now_ms=0.0),
    )
    thoughts = ThoughtsGenerated("run", ("4 * 6 = 24", "4 + 6 = 10"))
    machine, directives = update(machine, thoughts, Env(now_ms=1.0))
    return machine, directives[0]


def test_agt_state_010_a_tot_machine_restored_mid_search_continues_exactly_like_the_original():
    from llamabot.reasoning.tot.machine import Env, Status, update
    from llamabot.reasoning.tot.messages import ThoughtsEvaluated

    machine, evaluate = _tot_evaluating()
    assert machine.status is Status.EVALUATING and machine.pending_thoughts
    restored = assert_restored({"machine": machine, "directive": evaluate}, ())
    reply = ThoughtsEvaluated(evaluate.call_id, {"t1": 0.6, "t2": 0.3})
    assert update(restored["machine"], reply, Env(now_ms=2.0)) == update(machine, reply, Env(now_ms=2.0))


def test_agt_state_010_a_finished_tot_machine_round_trips_with_its_whole_tree():
    from llamabot.reasoning.tot.machine import Env, Status, update
    from llamabot.reasoning.tot.messages import EvaluateThoughts, ThoughtsEvaluated, ThoughtsGenerated

    machine, directive = _tot_evaluating()
    for step in range(20):
        if isinstance(directive, EvaluateThoughts):
            scores = {t.id: 0.5 + 0.1 * i for i, t in enumerate(directive.thoughts)}
            message = ThoughtsEvaluated(directive.call_id, scores)
        else:
            message = ThoughtsGenerated(directive.call_id, (f"step {step} a", f"step {step} b"))
        machine, directives = update(machine, message, Env(now_ms=10.0 + step))
        if not directives:
            break
        directive = directives[0]
    assert machine.status is Status.COMPLETED and len(machine.nodes) > 3
    restored = assert_restored(machine, ())
    assert list(restored.nodes) == list(machine.nodes) and restored.solution_path == machine.solution_path


SCRIPT = """(c1)=LLM('Kids: {(context)}[1][attributes][GoodForKids]')
(c2)=LLM('Cozy: {(context)}[1][reviews]')
(final)=LLM('c1={(c1)}, c2={(c2)}. Output top-5')"""
STRATEGY = {
    "conditions": [
        {"request_words": "kids", "id": 1, "type": "ATTR", "path": "attributes.GoodForKids", "expected": "1"},
        {"request_words": "cozy", "id": 2, "type": "REVIEW_TEXT", "path": "reviews", "expected": "cozy"},
    ],
    "logic": "AND(1, 2)",
    "total_items": 2,
    "message": "kids and cozy",
}
ITEMS = [
    {"name": "A", "attributes": {"GoodForKids": True}, "reviews": [{"text": "cozy"}]},
    {"name": "B", "attributes": {"GoodForKids": False}, "reviews": [{"text": "loud"}]},
]


def _anot_state(strategy):
    from llamabot.reasoning.anot.lwt import execution_layers, parse_lwt
    from llamabot.reasoning.anot.ranking import Ranking
    from llamabot.reasoning.anot.state import new_anot_state

    state = new_anot_state("a cozy cafe for kids", ITEMS, tag="R00", trace_id="t")
    steps = parse_lwt(SCRIPT)
    state.update(
        strategy=strategy, steps=steps, layers=execution_layers(steps), layer=2,
        outputs={"c1": "[1]", "c2": "[1, 2]"}, phase2={"iterations": 1, "fallback": None},
        ranking=Ranking((1, 2), "scores", (1,)), errors=["P2: a note"],
    )
    return state


def test_agt_state_010_an_anot_state_round_trips_whole():
    from llamabot.reasoning.anot.strategy import Strategy

    state = _anot_state(Strategy.model_validate(STRATEGY))
    restored = assert_restored(state, ())
    assert all(type(step) is type(state["steps"][0]) for step in restored["steps"])
    assert [[s.id for s in layer] for layer in restored["layers"]] == [["c1", "c2"], ["final"]]


def test_agt_state_010_a_run_time_pydantic_class_round_trips_when_the_caller_allows_it():
    from llamabot.reasoning.anot.strategy import strategy_model
    from llamabot.reasoning.anot.vocabulary import YELP_VOCABULARY

    model = strategy_model(YELP_VOCABULARY)  # made by pydantic.create_model: its name finds the base class
    condition = model.model_fields["conditions"].annotation.__args__[0]
    strategy = model.model_validate(STRATEGY)
    restored = assert_restored({"strategy": strategy}, (model, condition))["strategy"]
    assert type(restored) is model and type(restored.conditions[0]) is condition


def test_agt_state_020_a_run_time_pydantic_class_is_refused_when_not_allowed():
    from llamabot.reasoning.anot.strategy import strategy_model
    from llamabot.reasoning.anot.vocabulary import YELP_VOCABULARY

    strategy = strategy_model(YELP_VOCABULARY).model_validate(STRATEGY)
    error = refusal(encode_state, {"strategy": strategy})
    assert error.path == "state['strategy']" and "allowed=" in error.reason


def test_agt_state_020_a_live_debug_log_put_in_a_state_is_refused_at_its_sink():
    from llamabot.reasoning.anot.debug import DebugLog

    error = refusal(encode_state, {"query": "q", "log": DebugLog()})
    assert error.path == "state['log'].sink" and "function" in error.reason


def test_agt_state_020_the_anot_lwt_script_object_is_not_data():
    from llamabot.reasoning.anot.script import LWTScript

    error = refusal(encode_state, {"script": LWTScript()})
    assert error.path == "state['script']" and "llamabot.reasoning.anot.script.LWTScript" in error.reason


# -- refusals when saving -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "type_name"),
    [
        (lambda: (lambda: None), "function"),
        (lambda: print, "builtin_function_or_method"),
        (lambda: io.StringIO(), "_io.StringIO"),
        (lambda: threading.Lock(), "_thread.lock"),
        (lambda: asyncio.Event(), "asyncio.locks.Event"),
        (lambda: (i for i in ()), "generator"),
        (lambda: Point, "type"),
        (lambda: b"bytes", "bytes"),
        (lambda: OrderedDict(a=1), "collections.OrderedDict"),
        (lambda: defaultdict(list), "collections.defaultdict"),
    ],
)
def test_agt_state_020_a_value_that_is_not_data_is_refused_naming_its_path_and_type(make, type_name):
    error = refusal(encode_state, {"run": [1, {"handle": make()}]}, allowed=ALLOWED)
    assert error.path == "state['run'][1]['handle']"
    assert f"cannot save a {type_name} " in error.reason


def test_agt_state_020_a_live_handle_deep_in_a_model_is_named_by_its_path():
    from llamabot.reasoning.aot.plan import Plan

    plan = Plan.model_validate(SEED_PLAN)
    plan.atoms[3].input = {"callback": print}
    error = refusal(dumps_state, {"plan": plan})
    assert error.path == "state['plan'].atoms[3].input['callback']"
    assert str(error).startswith("state['plan'].atoms[3].input['callback']: cannot save a builtin_function")


def test_agt_state_020_a_state_that_contains_itself_is_refused():
    loop: list[Any] = [1]
    loop.append({"again": loop})
    error = refusal(encode_state, loop)
    assert error.path == "state[1]['again']" and "cycle" in error.reason


def test_agt_state_020_a_class_outside_llamabot_must_be_allowed_both_to_save_and_to_restore():
    error = refusal(encode_state, {"p": Point(1)})
    assert error.path == "state['p']" and "tests.graph.test_codec:Point" in error.reason
    saved = encode_state({"p": Point(1)}, allowed=(Point,))
    assert refusal(decode_state, saved).path == "state['p']"
    assert decode_state(saved, allowed=(Point,)) == {"p": Point(1)}


def test_agt_state_020_a_class_defined_in_a_function_is_refused_unless_allowed():
    @dataclass
    class Local:
        x: int

    assert "<locals>" in refusal(encode_state, Local(1)).reason
    assert round_trip([Local(1)], (Local,)) == [Local(1)]


# -- refusals when restoring --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "os:system",
        "builtins:eval",
        "subprocess:Popen",
        "llamabot.graph.codec:dumps_state",  # under llamabot, but a function
        "llamabot.graph.codec:pkgutil.resolve_name",  # reached through a module attribute
        "llamabot.graph.codec:BaseModel",  # a class imported there, not defined there
        "llamabot.graph.codec:StateCodecError",  # a class, but not data
        "llamabot.no_such_module:Thing",
        "llamabotx.evil:Thing",  # not under the llamabot package, though it starts like it
        "llamabot.graph.codec:__builtins__",
        "os.system",
        "__import__('os').system",
    ],
)
@pytest.mark.parametrize("kind", ["dataclass", "model", "enum"])
def test_agt_state_020_a_tag_naming_a_class_that_may_not_be_restored_is_refused(name, kind, monkeypatch):
    resolved = []
    real_resolve = pkgutil.resolve_name
    monkeypatch.setattr(pkgutil, "resolve_name", lambda n: resolved.append(n) or real_resolve(n))
    saved = {"steps": [1, {TAG: kind, "class": name, "fields": {"command": "echo pwned"}, "name": "X"}]}
    error = refusal(decode_state, saved)
    assert error.path == "state['steps'][1]"
    assert isinstance(error, LlamabotError) and isinstance(error, ValueError)
    assert all(n.startswith("llamabot.") for n in resolved)  # nothing outside llamabot is even looked up


def test_agt_state_020_a_tag_naming_a_llamabot_class_of_another_kind_is_refused():
    saved = {TAG: "model", "class": "llamabot.agents.agent_state:PendingCall", "fields": {}}
    assert "not a pydantic model class" in refusal(decode_state, saved).reason


@pytest.mark.parametrize(
    ("saved", "words"),
    [
        ({TAG: "pickle", "data": "..."}, "unknown tag"),
        ({TAG: "tuple", "items": "abc"}, "malformed 'tuple'"),
        ({TAG: "deque", "items": [], "maxlen": -1}, "malformed 'deque'"),
        ({TAG: "dict", "items": [[1]]}, "malformed 'dict'"),
        ({TAG: "dict", "items": [[[1], 2]]}, "cannot be hashed"),
        ({TAG: "float", "value": "1e999"}, "malformed 'float'"),
        ({TAG: "fraction", "value": "1e100000000"}, "malformed 'fraction'"),
        ({TAG: "enum", "class": "llamabot.reasoning.tot.machine:Status", "name": "NOPE"}, "has no member"),
    ],
)
def test_agt_state_020_malformed_tagged_values_are_refused_naming_their_path(saved, words):
    error = refusal(decode_state, {"outer": [saved]})
    assert error.path.startswith("state['outer'][0]") and words in error.reason


def test_agt_state_020_a_field_the_class_no_longer_has_is_refused():
    saved = encode_state({"call": _pending_call()})
    saved["call"]["fields"]["renamed"] = 1
    error = refusal(decode_state, saved)
    assert error.path == "state['call']" and "'renamed'" in error.reason


def test_agt_state_020_saved_values_the_class_itself_rejects_are_refused():
    from llamabot.reasoning.tot.options import ToTOptions

    saved = encode_state({"options": ToTOptions()})
    saved["options"]["fields"]["branching_factor"] = 0
    error = refusal(decode_state, saved)
    assert error.path == "state['options']" and "branching_factor" in error.reason


def test_agt_state_020_a_saved_attribute_with_a_dunder_name_is_refused():
    saved = encode_state({"box": Box()}, allowed=(Box,))
    saved["box"]["attrs"] = {"__class__": "x"}
    error = refusal(decode_state, saved, allowed=(Box,))
    assert error.path == "state['box']" and "'attrs'" in error.reason


def test_agt_state_020_allowed_takes_only_dataclass_model_and_enum_classes():
    with pytest.raises(TypeError, match="allowed="):
        encode_state(1, allowed=(dict,))


def test_agt_state_020_text_that_is_not_json_is_refused():
    assert refusal(loads_state, "{not json").path == "state"


def test_agt_state_020_only_json_data_can_be_decoded():
    assert "not JSON data" in refusal(decode_state, {"x": (1, 2)}).reason


def _pending_call():
    from llamabot.agents.agent_state import PendingCall

    return PendingCall("c1", "add", {"a": 1}, '{"a": 1}')


def test_agt_state_020_classes_that_moved_restore_under_the_names_older_states_saved():
    """ToT's state types left ``reasoning.tot.machine`` for ``reasoning.tot.state``: a state saved before still
    restores (``MOVED_CLASSES``), equal to the machine it saved."""
    from llamabot.reasoning.tot.machine import Start, new_machine, update

    machine, _ = update(new_machine(branching_factor=2), Start("problem", "run"))
    text = json.dumps(encode_state({"m": machine}))
    assert "llamabot.reasoning.tot.state:" in text
    older = json.loads(text.replace("llamabot.reasoning.tot.state:", "llamabot.reasoning.tot.machine:"))
    assert decode_state(older) == {"m": machine}
