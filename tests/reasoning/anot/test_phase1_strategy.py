"""Phase 1: structured strategy output, its text form, the configurable vocabulary and the draft script
(ANOT-P1-*, ANOT-DRAFT-*), with the scripted model."""

from __future__ import annotations

import pytest

from llamabot import ScriptedModel
from llamabot.models.scripted import json_reply
from llamabot.reasoning.anot import ANoTBot, ConditionType, render_strategy
from llamabot.reasoning.anot import strategy as strategy_module
from llamabot.reasoning.anot.draft import draft_lwt, locate_path
from llamabot.reasoning.anot.lwt import execution_layers
from llamabot.reasoning.anot.strategy import strategy_model
from llamabot.reasoning.anot.vocabulary import YELP_VOCABULARY

from .helpers import ITEMS, STRATEGY, phase, three_phase_responder

Strategy = strategy_model(YELP_VOCABULARY)


def test_anot_p1_010_phase1_sees_the_request_and_a_compact_schema_not_the_items():
    model = ScriptedModel(responder=three_phase_responder())
    result = ANoTBot(model=model, debug=0)("a kid-friendly cozy cafe", ITEMS)
    request = next(r for r in model.requests if phase(r) == "P1")
    prompt = request.last_user_text
    assert "a kid-friendly cozy cafe" in prompt and "Number of items: 3" in prompt
    assert "attributes.GoodForKids: bool e.g. True" in prompt
    assert "reviews: list (up to 2) of {text}" in prompt
    assert "so cozy" not in prompt and "COZY!" not in prompt  # no item data beyond the schema
    schema = request.response_format["json_schema"]["schema"]
    assert schema["$defs"]["Condition"]["properties"]["type"]["enum"] == [t.name for t in YELP_VOCABULARY]
    assert result.strategy.logic == "AND(1, 2)"


def test_anot_p1_020_the_strategy_renders_in_the_seed_text_form():
    strategy = Strategy.model_validate(STRATEGY)
    assert render_strategy(strategy, YELP_VOCABULARY) == (
        "===STRATEGY===\n"
        "CONDITIONS:\n"
        "  1. [ATTR] attributes.GoodForKids = True\n"
        '  2. [REVIEW_TEXT] reviews ~ "cozy"\n'
        "\n"
        "LOGIC: AND(1, 2)\n"
        "TOTAL_ITEMS: 3\n"
        "\n"
        "===MESSAGE===\n"
        "kids and cozy"
    )


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"logic": "AND(1, 7)"}, "uses condition ids [7]"),
        ({"logic": "AND(1, 2"}, "missing ')'"),
        ({"conditions": [{"request_words": "w", "id": 1, "type": "SMELL", "path": "x", "expected": "y"}], "logic": "AND(1)"}, "conditions.0.type"),
        ({"conditions": [STRATEGY["conditions"][0], STRATEGY["conditions"][0]], "logic": "AND(1)"}, "ids repeat"),
    ],
)
def test_anot_p1_030_invalid_strategies_are_sent_back_and_repaired(change, error):
    bad = {**STRATEGY, **change}
    good = three_phase_responder()
    model = ScriptedModel([json_reply(bad)], responder=good)
    result = ANoTBot(model=model, debug=0)("q", ITEMS)
    assert result.strategy is not None and result.errors == []
    repair = model.requests[1]
    assert phase(repair) == "P1" and error in repair.last_user_text


def test_anot_p1_040_without_a_valid_strategy_phase2_works_from_the_request():
    model = ScriptedModel(
        [json_reply({"nonsense": True})] * 3,
        responder=three_phase_responder(final="[2]"),
    )
    result = ANoTBot(model=model, debug=0, max_repairs=2)("find a cafe", ITEMS)
    assert result.strategy is None and "phase 1" in result.errors[0]
    p2 = next(r for r in model.requests if phase(r) == "P2")
    assert "Request: find a cafe" in p2.last_user_text and "The script is empty" in p2.last_user_text
    # done() refuses the empty script; the agent gives up; the one-step fallback script ranks
    assert result.phase2["fallback"] == "a one-step script"
    assert [s.id for s in result.steps] == ["final"] and result.ranking.best == 2


def test_anot_p1_050_total_items_is_corrected_to_the_real_count():
    model = ScriptedModel(responder=three_phase_responder(strategy={**STRATEGY, "total_items": 40}))
    assert ANoTBot(model=model, debug=0)("q", ITEMS).strategy.total_items == 3


def test_anot_p1_060_the_condition_vocabulary_is_configurable():
    vocabulary = (ConditionType("PRICE", "price in dollars"), ConditionType("MENTION", "text mentions", "keyword"))
    strategy = {
        "conditions": [{"request_words": "w", "id": 1, "type": "PRICE", "path": "price", "expected": "< 10"},
                       {"request_words": "w", "id": 2, "type": "MENTION", "path": "notes", "expected": "vegan"}],
        "logic": "OR(1, 2)", "total_items": 2, "message": "",
    }
    books = [{"price": 8, "notes": ["Vegan options"]}, {"price": 30, "notes": ["steak"]}]
    model = ScriptedModel(responder=three_phase_responder(strategy=strategy, final="[1]", condition="[1]"))
    result = ANoTBot(model=model, vocabulary=vocabulary, debug=0)("cheap or vegan", books)
    p1 = next(r for r in model.requests if phase(r) == "P1")
    assert "- [PRICE] price in dollars" in p1.messages[0]["content"] and "[ATTR]" not in p1.messages[0]["content"]
    assert "[MENTION] notes" in result.strategy_text
    assert "{(items)}[*][notes][~vegan]" in result.lwt and "{(items)}[*][price]" in result.lwt
    with pytest.raises(ValueError, match="UPPER_CASE"):
        ConditionType("price", "lower case")


def test_anot_draft_010_one_step_per_condition_plus_final_with_located_paths():
    strategy = Strategy.model_validate({
        **STRATEGY,
        "conditions": [
            {"request_words": "w", "id": 1, "type": "ATTR", "path": "goodforkids", "expected": "True"},
            {"request_words": "w", "id": 2, "type": "AMBIENCE", "path": "Ambience.hipster", "expected": "True"},
            {"request_words": "w", "id": 3, "type": "REVIEW_TEXT", "path": "reviews.text", "expected": "cozy's [best]"},
        ],
        "logic": "AND(1, OR(2, 3))",
    })
    steps = draft_lwt(strategy, ITEMS, YELP_VOCABULARY)
    assert [s.id for s in steps] == ["c1", "c2", "c3", "final"]
    assert "{(items)}[*][attributes][GoodForKids]" in steps[0].prompt
    assert "{(items)}[*][attributes][Ambience][hipster]" in steps[1].prompt
    assert "{(items)}[*][reviews][~cozy s best]" in steps[2].prompt
    assert steps[3].references == ("c1", "c2", "c3") and "AND(1, OR(2, 3))" in steps[3].prompt
    assert [len(layer) for layer in execution_layers(steps)] == [3, 1]
    assert locate_path(ITEMS, ("nothing", "here")) == ("nothing", "here")


def test_anot_draft_015_value_and_keyword_conditions_become_checks_the_rest_model_steps():
    strategy = Strategy.model_validate({
        **STRATEGY,
        "conditions": [
            {"request_words": "w", "id": 1, "type": "ATTR", "path": "attributes.GoodForKids", "expected": "True"},
            {"request_words": "w", "id": 2, "type": "ATTR", "path": "attributes.WiFi", "expected": "not no"},
            {"request_words": "w", "id": 3, "type": "ATTR", "path": "attributes.RestaurantsPriceRange2", "expected": "<= 2"},
            {"request_words": "w", "id": 4, "type": "REVIEW_TEXT", "path": "reviews", "expected": "cozy"},
            {"request_words": "w", "id": 5, "type": "HOURS", "path": "hours.Monday", "expected": "open 7:00"},
            {"request_words": "w", "id": 6, "type": "ATTR", "path": "attributes.RestaurantsPriceRange2", "expected": "< cheap"},
            {"request_words": "w", "id": 7, "type": "HOURS", "path": "attributes.WiFi", "expected": "False"},
            {"request_words": "w", "id": 8, "type": "REVIEW_TEXT", "path": "name", "expected": "a"},
        ],
        "logic": "AND(1, 2, 3, 4, 5, 6, 7, 8)",
    })
    steps = draft_lwt(strategy, ITEMS, YELP_VOCABULARY)
    assert [(s.kind, s.prompt) for s in steps[:4]] == [
        ("CHECK", "{(items)}[*][attributes][GoodForKids] == True"),
        ("CHECK", "{(items)}[*][attributes][WiFi] != no"),
        ("CHECK", "{(items)}[*][attributes][RestaurantsPriceRange2] <= 2"),
        ("CHECK", "{(items)}[*][reviews][~cozy] == True"),
    ]
    # HOURS is a "model" condition type; "< cheap" is no comparison a CHECK can make: both ask the model
    assert [s.kind for s in steps[4:6]] == ["LLM", "LLM"]
    # ...but a "model" condition expecting True/False is a CHECK of truthiness (the 1.5B model types loosely), and
    # a keyword condition on a text searches the text itself
    assert [s.prompt for s in steps[6:8]] == ["{(items)}[*][attributes][WiFi] == False", "{(items)}[*][name][~a] == True"]
    assert steps[8].kind == "LLM" and steps[8].id == "final"
    assert "Which are open 7:00?" in steps[4].prompt and "Which are < cheap?" in steps[5].prompt
    assert [s.render() for s in steps[:2]] == [
        "(c1)=CHECK('{(items)}[*][attributes][GoodForKids] == True')", "(c2)=CHECK('{(items)}[*][attributes][WiFi] != no')"
    ]


def test_anot_draft_020_phase2_starts_from_the_draft_unless_disabled():
    empty_start = ScriptedModel(responder=three_phase_responder())
    ANoTBot(model=empty_start, draft=False, debug=0)("q", ITEMS)
    p2 = next(r for r in empty_start.requests if phase(r) == "P2")
    assert "The script is empty" in p2.last_user_text
    assert "Example:" in p2.messages[0]["content"]  # from scratch: the full syntax with a worked example
    drafted = ScriptedModel(responder=three_phase_responder())
    ANoTBot(model=drafted, debug=0)("q", ITEMS)
    p2 = next(r for r in drafted.requests if phase(r) == "P2")
    assert "1. (c1)=CHECK(" in p2.last_user_text and "3. (final)=LLM(" in p2.last_user_text
    assert p2.messages[0]["content"].startswith("You check an LWT script")  # the draft shows the syntax


def test_anot_draft_030_phase2_sees_each_condition_with_the_request_words_not_the_strategy_block():
    model = ScriptedModel(responder=three_phase_responder())
    result = ANoTBot(model=model, debug=0)("q", ITEMS)
    p2 = next(r for r in model.requests if phase(r) == "P2").last_user_text
    assert '1. "w" -> attributes.GoodForKids = True' in p2
    assert '2. "w" -> reviews ~ "cozy"' in p2 and "Logic: AND(1, 2)" in p2
    assert "===STRATEGY===" not in p2  # the seed's text form is for display and logs
    assert result.strategy_text.startswith("===STRATEGY===")


def test_anot_p1_070_repeated_conditions_are_merged_and_logic_rewritten():
    repeated = {
        "conditions": [
            {"request_words": "kids", "id": 1, "type": "ATTR", "path": "attributes.GoodForKids", "expected": "True"},
            {"request_words": "cozy", "id": 2, "type": "REVIEW_TEXT", "path": "reviews", "expected": "cozy"},
            {"request_words": "little ones", "id": 3, "type": "ATTR", "path": "Attributes.GoodForKids ", "expected": "true"},
            {"request_words": "snug", "id": 4, "type": "REVIEW_TEXT", "path": "reviews", "expected": "Cozy"},
        ],
        "logic": "AND(1, 3, OR(2, 4))",
        "total_items": 3,
        "message": "",
    }
    model = ScriptedModel(responder=three_phase_responder(strategy=repeated))
    result = ANoTBot(model=model, debug=0)("q", ITEMS)
    assert [c.id for c in result.strategy.conditions] == [1, 2]
    assert result.strategy.logic == "AND(1, OR(2))"
    assert [s.id for s in result.steps] == ["c1", "c2", "final"]  # one phase 3 call per distinct condition


def test_anot_p1_080_a_vocabulary_strategy_pickles_and_copies_as_itself():
    """ANOT-P1-080: the vocabulary's strategy model is made at run time, yet its instances (a durable run's result
    holds one) pickle and deep-copy as instances of the same class, equal to the original; plain ``Strategy`` and
    ``Condition`` values pickle as before."""
    import copy
    import pickle

    from llamabot.reasoning.anot.strategy import Condition, condition_model
    from llamabot.reasoning.anot.strategy import Strategy as PlainStrategy

    strategy = Strategy.model_validate(STRATEGY)
    assert strategy_model(YELP_VOCABULARY) is Strategy  # one class per vocabulary
    for value in (strategy, copy.deepcopy(strategy)):
        back = pickle.loads(pickle.dumps(value))
        assert type(back) is Strategy and back == strategy
        assert type(back.conditions[0]) is condition_model(Strategy)
    other = strategy_model((ConditionType("ONLY", "a single type"),))
    only = other.model_validate({**STRATEGY, "conditions": [{**STRATEGY["conditions"][0], "type": "ONLY"}],
                                 "logic": "AND(1)"})
    assert pickle.loads(pickle.dumps(only)) == only and type(pickle.loads(pickle.dumps(only))) is other
    plain = PlainStrategy.model_validate(STRATEGY)
    assert pickle.loads(pickle.dumps(plain)) == plain
    assert type(pickle.loads(pickle.dumps(plain.conditions[0]))) is Condition
    mine = NotedStrategy.model_validate({**STRATEGY, "note": "by name"})  # a user's subclass: pickled by name
    assert pickle.loads(pickle.dumps(mine)) == mine and type(pickle.loads(pickle.dumps(mine))) is NotedStrategy


class NotedStrategy(strategy_module.Strategy):  # the plain Strategy, subclassed as a user might
    note: str = ""
