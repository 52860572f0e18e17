"""CHECK steps: parsed with the script, evaluated by the program over the items, no model call (ANOT-CHK-*)."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llamabot import ScriptedModel
from llamabot.reasoning.anot import ANoTBot, AsyncANoTBot, LWTStep, LWTSyntaxError, parse_lwt
from llamabot.reasoning.anot.checks import CheckError, check_output, matching_items, parse_check
from llamabot.reasoning.anot.lwt import parse_step, render_lwt
from llamabot.reasoning.anot.script import LWTScript

from .helpers import ITEMS

DATA = [
    {"a": {"kids": True, "wifi": "free", "price": 2, "parking": {"lot": False, "street": True}, "tags": ["cozy", "quiet"]}},
    {"a": {"kids": False, "wifi": "no", "price": "1", "parking": {"lot": False, "street": False}, "tags": []}},
    {"a": {"kids": None, "wifi": "Free", "price": 3}},
    {"a": {}},
]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("{(items)}[*][a][kids] == True", [1]),
        ("{(items)}[*][a][kids] = false", [2]),  # '=' is equality; missing (4) and None (3) never match
        ("{(items)}[*][a][kids] != True", [2]),
        ("{(items)}[*][a][wifi] == free", [1, 3]),  # text: case-insensitive
        ("{(items)}[*][a][wifi] == False", [2]),  # truthiness of a text: "no" is false
        ("{(items)}[*][a][wifi] == 'yes'", [1, 3]),
        ("{(items)}[*][a][price] <= 2", [1, 2]),  # a numeric text compares as a number
        ("{(items)}[*][a][price] > 1.5", [1, 3]),
        ("{(items)}[*][a][price] == 2", [1]),
        ("{(items)}[*][a][parking] == True", [1]),  # a dict is truthy when one of its values is
        ("{(items)}[*][a][parking] == street", [1]),  # ...and equals a key whose value is truthy
        ("{(items)}[*][a][tags] == Quiet", [1]),  # a list holds an element equal to it
        ("{(items)}[*][a][tags] == False", [2]),
        ('{(context)}[*][a][wifi] != "no"', [1, 3]),
    ],
)
def test_anot_chk_010_a_check_lists_the_items_whose_value_compares_so(expression, expected):
    assert matching_items(parse_check(expression), DATA) == expected


def test_anot_chk_010_keyword_counts_and_the_output_form():
    assert check_output(parse_check("{(items)}[*][reviews][~cozy] >= 1"), ITEMS) == "[1, 3]"
    assert check_output(parse_check("{(items)}[*][reviews][~cozy] >= 2"), ITEMS) == "[3]"
    assert check_output(parse_check("{(items)}[*][reviews][~nothing] >= 1"), ITEMS) == "[]"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("GoodForKids is True", "as path op value"),
        ("{(items)}[1][a][kids] == True", "starts with [*]"),
        ("{(items)}[*] == True", "names a field"),
        ("{(items)}[*][a][price] < cheap", "< compares numbers; 'cheap' is not a number"),
        ("{(items)}[*][a][kids] == ", "nothing to compare with"),
        ("{(items)}[*][__class__] == x", "'__' are not allowed"),
        ("{(c1)} == True", "as path op value"),
        ("{(items)}[*][a][price] >= nan", "not a number"),
    ],
)
def test_anot_chk_020_a_malformed_check_is_a_typed_error_saying_what_is_wrong(expression, message):
    with pytest.raises(CheckError, match=re.escape(message)):
        parse_check(expression)


def test_anot_chk_020_the_script_refuses_a_malformed_check_naming_the_step_and_line():
    with pytest.raises(LWTSyntaxError, match=r"line 2: step 'c2': .*as path op value") as info:
        parse_lwt("(c1)=CHECK('{(items)}[*][a] == 1')\n(c2)=CHECK('a is b')")
    assert info.value.step_id == "c2" and info.value.line == 2
    with pytest.raises(ValueError, match="kind must be"):
        LWTStep("c1", "x", kind="SQL")
    with pytest.raises(TypeError, match="not a CHECK"):
        _ = LWTStep("c1", "x").check
    script = LWTScript([], ITEMS)
    with pytest.raises(LWTSyntaxError, match="compares numbers"):
        script.insert(1, "(c1)=CHECK('{(items)}[*][attributes][WiFi] > free')")
    assert "inserted (c1)" in script.insert(1, "(c1)=CHECK('{(items)}[*][attributes][GoodForKids] == True')")
    # the same text as an LLM step is another step: lwt_set replaces it
    assert script.set(1, "(c1)=LLM('{(items)}[*][attributes][GoodForKids] == True')").startswith("set step 1")
    assert script.steps[0].kind == "LLM"


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["LLM", "CHECK"]),
            st.sampled_from(["kids", "wifi", "price", "~cozy"]),
            st.sampled_from(["==", "!=", "<=", ">"]),
            st.sampled_from(["True", "2", "free", "it's"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_anot_chk_030_check_steps_render_and_parse_back_with_their_kind(specs):
    steps = []
    for index, (kind, field, op, value) in enumerate(specs):
        if kind == "CHECK" and op not in ("==", "!=") and not value.isdigit():
            op = "=="
        expression = f"{{(items)}}[*][a][{field}] {op} {value}"
        steps.append(LWTStep(f"c{index}", expression, kind=kind))
    parsed = parse_lwt(render_lwt(steps))
    assert [(s.id, s.kind, s.prompt) for s in parsed] == [(s.id, s.kind, s.prompt) for s in steps]
    assert parse_step(steps[0].render()).kind == steps[0].kind


def test_anot_chk_040_a_run_evaluates_checks_without_the_model_and_a_bad_path_is_an_error_output():
    script = "\n".join([
        "(c1)=CHECK('{(items)}[*][attributes][GoodForKids] == True')",
        "(c2)=CHECK('{(items)}[*][reviews][name] == x')",  # a word where the list needs an index
        "(c3)=LLM('Hipster: {(items)}[*][attributes][Ambience][hipster]. Which are True? Output: [indices]')",
        "(final)=LLM('c1={(c1)}, c3={(c3)}. Output top-5: [best, ...]')",
    ])
    model = ScriptedModel(responder=lambda request: "[3, 1]" if "top-5" in request.last_user_text else "[1]")
    result = ANoTBot(model=model, debug=0, rank_by="final").execute(script, ITEMS)
    assert result.outputs["c1"] == "[1, 3]"
    assert result.outputs["c2"].startswith("ERROR: step 'c2': this value is a list of")
    assert [r.last_user_text.split(":")[0] for r in model.requests] == ["Hipster", "c1=[1, 3], c3=[1]. Output top-5"]
    amodel = ScriptedModel(responder=lambda request: "[3, 1]" if "top-5" in request.last_user_text else "[1]")
    aresult = asyncio.run(AsyncANoTBot(model=amodel, debug=0, rank_by="final").aexecute(script, ITEMS))
    assert aresult.outputs == result.outputs and len(amodel.requests) == 2
    # every step that ran has its lwt_step span, a CHECK's without a model call below it
    steps = {s.name: s for s in result.trace.of_kind("lwt_step")}
    assert set(steps) == {"c1", "c3", "final"}  # c2 could not be walked: an ERROR output, no span
    by_id = {s.span_id: s for s in result.trace.spans}
    calls = {by_id[s.parent_id].name for s in result.trace.spans if s.category == "model_call"}
    assert calls == {"c3", "final"}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)


@given(JSON, st.sampled_from(["True", "no", "2", "-1.5", "free", "0"]))
def test_anot_chk_010_any_data_value_compares_without_error_and_not_equal_is_the_complement(value, written):
    items = [{"v": value}]
    equal = matching_items(parse_check(f"{{(items)}}[*][v] == {written}"), items)
    unequal = matching_items(parse_check(f"{{(items)}}[*][v] != {written}"), items)
    if value is None:
        assert equal == unequal == []  # None, like missing, never matches
    else:
        assert sorted(equal + unequal) == [1]
    if isinstance(parse_check(f"{{(items)}}[*][v] == {written}").expected, float):
        matching_items(parse_check(f"{{(items)}}[*][v] >= {written}"), items)  # ordering never raises either
