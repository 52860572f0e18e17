"""The LWT parser and the dependency DAG (ANOT-LWT-*), without a model."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from llamabot.reasoning.anot import (
    LWTCycleError,
    LWTReferenceError,
    LWTStep,
    LWTSyntaxError,
    execution_layers,
    parse_lwt,
)
from llamabot.reasoning.anot.lwt import final_step, parse_step, render_lwt

SCRIPT = """
# conditions
(c1)=LLM('GoodForKids: {(items)}[*][attributes][GoodForKids]. Which are True? Output: [indices]')
(5.agg)=LLM("WiFi: {(context)}[1][attributes][WiFi] for {(query)}")
(final)=LLM('c1={(c1)}, agg={(5.agg)}. Output top-5')
"""


def ids(layers):
    return [[s.id for s in layer] for layer in layers]


def test_anot_lwt_010_parses_both_quote_forms_and_seed_ids():
    steps = parse_lwt(SCRIPT)
    assert [s.id for s in steps] == ["c1", "5.agg", "final"]
    assert steps[1].prompt == "WiFi: {(context)}[1][attributes][WiFi] for {(query)}"
    assert [s.line for s in steps] == [3, 4, 5]


def test_anot_lwt_010_prompts_may_hold_quotes_span_lines_and_skip_fences():
    text = """```
(a)=LLM('it's the cafe's "best" spot')
(b)=LLM("line one
line two ')' still here")
(c)='bare {(a)} form'
(d)=LLM('escaped \\' quote')
```"""
    steps = parse_lwt(text)
    assert [s.prompt for s in steps] == [
        'it\'s the cafe\'s "best" spot',
        "line one\nline two ')' still here",
        "bare {(a)} form",
        "escaped ' quote",
    ]


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("(c1)=LLM('ok')\nthis is not a step", "expected a step like", 2),
        ("(c1)=LLM('never closed\n(c2)=LLM('x')", "unterminated", 1),
        ("(c1)=LLM('open", "unterminated", 1),
        ("(c1)=LLM('a')\n(c1)=LLM('b')", "defined twice (lines 1 and 2)", 2),
        ("(query)=LLM('a')", "reserved", 1),
        ("(c 1)=LLM('a')", "expected a step like", 1),
        ("(c1)=LLM('   ')", "prompt is empty", 1),
        ("(c1)=LLM(unquoted)", "must be quoted", 1),
    ],
)
def test_anot_lwt_020_syntax_errors_name_the_line(text, message, line):
    with pytest.raises(LWTSyntaxError, match=re.escape(message)) as info:
        parse_lwt(text)
    assert info.value.line == line
    assert isinstance(info.value, ValueError)


def test_anot_lwt_020_parse_step_wants_exactly_one_step_and_tolerates_a_missing_close_at_its_end():
    assert parse_step("  (x)=LLM('y')\n") == LWTStep("x", "y", 1)
    with pytest.raises(LWTSyntaxError, match="exactly one step, got more after"):
        parse_step("(x)=LLM('y')\n(z)=LLM('w')")
    assert parse_step("(c1)=LLM('Kids: {(items)}[*][a]. Output: [indices]").prompt == "Kids: {(items)}[*][a]. Output: [indices]"
    assert parse_step("(c1)=LLM('it is [x]'").prompt == "it is [x]"
    with pytest.raises(LWTSyntaxError, match="unterminated"):
        parse_lwt("(c1)=LLM('Kids: [indices]")  # a whole script stays strict
    with pytest.raises(LWTSyntaxError, match="empty"):
        parse_step("   ")


def test_anot_lwt_030_references_exclude_data_variables_in_order():
    step = LWTStep("final", "{(c2)} {(items)}[1] {(c1)} {(query)} {(c2)} {(context)} {(input)}")
    assert step.references == ("c2", "c1")


def test_anot_lwt_040_layers_follow_references_and_keep_script_order():
    steps = parse_lwt(
        "(c2)=LLM('x')\n(c1)=LLM('y')\n(agg)=LLM('{(c1)} {(c2)}')\n(c3)=LLM('{(c1)}')\n(final)=LLM('{(agg)} {(c3)}')"
    )
    assert ids(execution_layers(steps)) == [["c2", "c1"], ["agg", "c3"], ["final"]]


def test_anot_lwt_040_independent_steps_share_the_first_layer():
    steps = [LWTStep(f"c{i}", "x") for i in range(10)] + [LWTStep("final", " ".join(f"{{(c{i})}}" for i in range(10)))]
    layers = execution_layers(steps)
    assert len(layers) == 2 and len(layers[0]) == 10 and ids(layers)[1] == ["final"]


@pytest.mark.parametrize(
    ("script", "cycle", "blocked"),
    [
        ("(a)=LLM('{(a)}')", ("a", "a"), ("a",)),
        ("(a)=LLM('{(b)}')\n(b)=LLM('{(a)}')\n(c)=LLM('free')", ("a", "b", "a"), ("a", "b")),
        ("(x)=LLM('ok')\n(a)=LLM('{(c)}')\n(b)=LLM('{(a)}')\n(c)=LLM('{(b)} {(x)}')\n(final)=LLM('{(c)}')",
         ("a", "c", "b", "a"), ("a", "b", "c", "final")),
    ],
)
def test_anot_lwt_050_a_cycle_raises_naming_the_steps(script, cycle, blocked):
    with pytest.raises(LWTCycleError) as info:
        execution_layers(parse_lwt(script))
    assert info.value.cycle == cycle
    assert info.value.steps == blocked
    assert isinstance(info.value, ValueError)
    assert " -> ".join(cycle) in str(info.value)


def test_anot_lwt_060_an_unknown_reference_raises_naming_step_and_reference():
    steps = parse_lwt("(c1)=LLM('x')\n(final)=LLM('{(c1)} {(c9)} {(c8)}')")
    with pytest.raises(LWTReferenceError) as info:
        execution_layers(steps)
    assert info.value.missing == {"final": ("c9", "c8")}
    assert info.value.steps == ("final",)
    assert isinstance(info.value, ValueError)
    assert "step 'final' references {(c9)}, {(c8)}" in str(info.value) and "defined steps: c1, final" in str(info.value)


def test_anot_lwt_070_render_parses_back_to_the_same_steps():
    steps = [LWTStep("a", "plain"), LWTStep("b", "it's"), LWTStep("c", 'both \' and " quotes \\ slash')]
    parsed = parse_lwt(render_lwt(steps))
    assert [(s.id, s.prompt) for s in parsed] == [(s.id, s.prompt) for s in steps]


def test_anot_lwt_080_the_final_step_is_named_final_else_the_last():
    assert final_step(parse_lwt("(final)=LLM('a')\n(z)=LLM('b')")).id == "final"
    assert final_step(parse_lwt("(a)=LLM('a')\n(z)=LLM('b')")).id == "z"


def test_anot_lwt_090_package_exports_the_core_and_stays_import_cheap():
    code = (
        "import sys; from llamabot.reasoning.anot import parse_lwt, execution_layers; "
        "print(sorted(m for m in ('litellm', 'llama_cpp') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
