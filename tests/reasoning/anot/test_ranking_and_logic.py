"""The ranking parser and its fallbacks (ANOT-RANK-*), the LOGIC parser and scores (ANOT-LOGIC-*)."""

from __future__ import annotations

import pytest

from llamabot.reasoning.anot import parse_ranking
from llamabot.reasoning.anot.logic import Logic, LogicSyntaxError, logic_scores, parse_logic
from llamabot.reasoning.anot.ranking import condition_votes, parse_index_list


def test_anot_rank_010_the_last_bracketed_list_wins_and_is_completed():
    ranking = parse_ranking("c1=[1, 2] so the answer: [5, 1, 2]", 6)
    assert ranking.source == "list"
    assert ranking.parsed == (5, 1, 2)
    assert ranking.indices == (5, 1, 2, 3, 4, 6)  # completed by item number without scores


def test_anot_rank_020_invalid_and_repeated_numbers_are_dropped():
    assert parse_ranking("[0, 7, 3, 3, 99, 1]", 5).parsed == (3, 1)


def test_anot_rank_030_without_a_list_the_last_line_with_item_numbers_is_used():
    text = "Item 2 matches 1 condition.\nBest: 4 then 2, and 9 is out of range\nThanks"
    ranking = parse_ranking(text, 5)
    assert ranking.source == "integers" and ranking.parsed == (4, 2)


def test_anot_rank_040_without_numbers_the_scores_rank():
    ranking = parse_ranking("I cannot decide.", 4, scores={1: 0.5, 2: 1.0, 3: 0.0, 4: 0.5})
    assert ranking.source == "scores" and ranking.parsed == ()
    assert ranking.indices == (2, 1, 4, 3)  # ties by item number


def test_anot_rank_050_with_nothing_at_all_item_order_is_the_ranking():
    for text in (None, "", "no idea", "[]"):
        ranking = parse_ranking(text, 3, scores={1: 0.0})
        assert ranking.source == "order" and ranking.indices == (1, 2, 3)


def test_anot_rank_060_a_partial_list_is_completed_by_scores():
    ranking = parse_ranking("[3]", 4, scores={1: 0.2, 2: 0.9, 4: 0.5})
    assert ranking.indices == (3, 2, 4, 1)
    assert ranking.best == 3 and ranking.top(2) == (3, 2)


def test_anot_rank_070_index_lists_and_condition_votes():
    assert parse_index_list("none match: []", 5) == []
    assert parse_index_list("no list here", 5) is None
    assert parse_index_list("[2, 4,]", 5) == [2, 4]
    votes = condition_votes({"c1": "[1, 2]", "c2": "[2]", "final": "[1, 2, 3]"}, "final", 3)
    assert votes == {1: 1.0, 2: 2.0, 3: 0.0}


def test_anot_logic_010_parses_nested_and_or_and_renders_canonically():
    logic = parse_logic(" and(1, OR(2,3), and( 4 ,5) ) ")
    assert logic == Logic("AND", (1, Logic("OR", (2, 3)), Logic("AND", (4, 5))))
    assert logic.render() == "AND(1, OR(2, 3), AND(4, 5))"
    assert logic.condition_ids() == {1, 2, 3, 4, 5}
    assert parse_logic("2") == Logic("AND", (2,))


@pytest.mark.parametrize(
    ("text", "reason"),
    [("", "empty"), ("AND(1, 2", "missing"), ("AND 1, 2)", "followed by"), ("XOR(1)", "unexpected"),
     ("AND(1,, 2)", "expected a condition id"), ("AND(1) OR(2)", "after the expression"), ("AND()", "expected a condition id")],
)
def test_anot_logic_020_bad_logic_raises_with_the_position(text, reason):
    with pytest.raises(LogicSyntaxError, match=reason):
        parse_logic(text)


def test_anot_logic_030_scores_grade_partial_matches():
    logic = parse_logic("AND(1, OR(2, 3))")
    scores = logic_scores(logic, {1: {1, 2}, 2: {1}, 3: {3}}, 3)
    assert scores == {1: 1.0, 2: 0.5, 3: 0.5}
