"""Issue #13, defects 6 and 7: parsers read what is there, no more and no less (HARD-SCORE-*, HARD-LWT-*)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llamabot.models.text_fences import fenced_blocks, tagged_blocks
from llamabot.reasoning.anot.lwt import _NEXT_HEAD, LWTStep, parse_lwt, parse_step, render_lwt
from llamabot.reasoning.tot.parsing import parse_scores

THOUGHTS = ["a", "b", "c"]


@pytest.mark.parametrize("reply", ["13. looks fine", "25 points for thought 2", "12345", "t13: ok", "1234 0.5"])
def test_hard_score_010_digits_are_never_split_into_an_id_and_a_score(reply):
    """Regression: ``13. looks fine`` scored t1 = 0.3, ``25 points for thought 2`` scored t2 = 0.5."""
    assert parse_scores(reply, THOUGHTS) == ({}, "none")


@pytest.mark.parametrize(("reply", "scores"), [
    ("1. 0.8\n2: 0.4\nt3 = sure", {"t1": 0.8, "t2": 0.4, "t3": 1.0}),
    ("Thought 1 score: 7\nthought 2 - 3", {"t1": 0.7, "t2": 0.3}),
    ("- 1) impossible\n- 2) likely", {"t1": 0.0, "t2": 0.5}),
    ("1 0.9", {"t1": 0.9}),
])
def test_hard_score_010_numbered_scores_are_still_read(reply, scores):
    assert parse_scores(reply, THOUGHTS) == (scores, "numbered")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3), st.integers(0, 9), st.text(alphabet="abc .:", max_size=8))
def test_hard_score_020_a_number_glued_to_an_id_never_becomes_a_score(thought, digit, rest):
    """``<id><digit>...`` is one number: it names no thought (ids here are 1..3), so nothing is scored."""
    assume(not rest[:1].isdigit())
    reply = f"{thought}{digit}{rest}"
    found, _ = parse_scores(reply, THOUGHTS)
    assert found == {}


@pytest.mark.parametrize("prompt", ["path C:\\dir\\", "a \\\\ b", "it's \"quoted\" \\", "\\'", "x\\", "'\"\\'\""])
def test_hard_lwt_010_prompts_with_backslashes_render_and_parse_back(prompt):
    """Regression: ``path C:\\dir\\`` did not parse back, ``a \\\\ b`` came back as ``a \\ b``."""
    step = LWTStep("c1", prompt)
    assert parse_step(step.render()) == step.__class__("c1", prompt, 1)
    assert [s.prompt for s in parse_lwt(render_lwt([step, LWTStep("final", "{(c1)}")]))] == [prompt, "{(c1)}"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab {}()=\\'\"\n\t;#`c1")), min_size=1, max_size=40),
       st.sampled_from(["c1", "5.agg", "final", "x_y-z"]))
def test_hard_lwt_020_render_then_parse_is_the_identity(prompt, step_id):
    """Any prompt the parser accepts (not blank, no line inside it that starts like a step head)."""
    assume(prompt.strip() and not _NEXT_HEAD.search(prompt))
    step = LWTStep(step_id, prompt)
    assert parse_step(step.render()).prompt == prompt
    assert parse_lwt(step.render())[0].prompt == prompt


def test_hard_lin_030_one_fence_reader_for_every_parser():
    """The fenced-block reader the tool-call, structured-output and ToT parsers share (one, not three)."""
    assert fenced_blocks('x ```json\n{"a": 1}\n``` y ```JSON [1]``` ```python\nz``` ```open') == [
        '{"a": 1}', "[1]", "python\nz"]
    assert tagged_blocks("<t> 1 </t><t>2", "t") == ["1", "2"]
    import llamabot.bot.structuredbot as structured
    import llamabot.models.tool_call_text as tool_text
    import llamabot.reasoning.tot.parsing as tot_parsing

    for module in (structured, tool_text, tot_parsing):
        assert module.fenced_blocks is fenced_blocks
        assert not {"_FENCE", "_FENCED", "_TAGGED"} & set(vars(module))  # no fence regex of their own
