"""Data paths (ANOT-PATH-*) and prompt substitution (ANOT-SUB-*), without a model."""

from __future__ import annotations

import pytest

from llamabot.reasoning.anot import DataPathError, SubstitutionContext, SubstitutionError, substitute
from llamabot.reasoning.anot.paths import MISSING, parse_path, preview, resolve, walk

from .helpers import ITEMS


@pytest.mark.parametrize(
    "path",
    ["[1][attributes][Ambience][hipster]", "[1]['attributes'][\"Ambience\"][hipster]", "1.attributes.Ambience.hipster",
     "items[1].attributes.Ambience.hipster", "context[1][attributes].Ambience[hipster]",
     "{(context)}[1][attributes][Ambience][hipster]"],
)
def test_anot_path_010_spellings_of_one_path(path):
    assert parse_path(path) == ("1", "attributes", "Ambience", "hipster")
    assert resolve(ITEMS, path) is True


def test_anot_path_020_items_are_one_indexed_and_star_selects_every_item():
    assert resolve(ITEMS, "[1][name]") == "A"
    assert resolve(ITEMS, "[3][name]") == "C"
    assert resolve(ITEMS, "[*][attributes][WiFi]") == ["free", "no", MISSING]


def test_anot_path_030_missing_data_is_missing_not_an_error():
    assert resolve(ITEMS, "[2][attributes][DriveThru]") is MISSING
    assert resolve(ITEMS, "[3][attributes][Ambience][hipster]") is MISSING  # Ambience is None there
    assert resolve(ITEMS, "[1][name][first]") is MISSING  # a string has no fields
    assert resolve(ITEMS, "[1][reviews][5][text]") is MISSING  # past the end of a list


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("[0][name]", "1-indexed"),
        ("[4][name]", "1-indexed"),
        ("[first][name]", "item number"),
        ("[1][__class__]", "'__'"),
        ("[1].__dict__", "'__'"),
        ("[1][reviews][text]", "index it with a number"),
        ("[1][reviews][~cozy][text]", "must be the last"),
        ("[1][]", "empty segment"),
        ("[1][attributes", "unbalanced"),
    ],
)
def test_anot_path_040_paths_that_can_never_be_valid_raise_naming_the_segment(path, reason):
    with pytest.raises(DataPathError, match=reason) as info:
        resolve(ITEMS, path)
    assert isinstance(info.value, ValueError) and path in str(info.value)


def test_anot_path_050_keyword_search_counts_texts_or_tests_a_string():
    assert resolve(ITEMS, "[*][reviews][~cozy]") == [1, 0, 2]
    assert resolve(ITEMS, "[1][name][~a]") is True
    assert resolve(ITEMS, "[2][missing][~x]") is MISSING


def test_anot_path_060_walk_follows_only_dict_keys_and_list_indexes():
    class WithAttribute:
        secret = "leaked"

    data = {"obj": WithAttribute(), "items": ("a", "b")}
    assert walk(data, ("obj", "secret")) is MISSING  # attributes are never read
    assert walk(data, ("items", "1")) == "b"
    with pytest.raises(DataPathError):
        walk(data, ("__class__",))


def test_anot_path_070_preview_is_bounded():
    big = {"text": "x" * 10_000, "list": list(range(1000))}
    assert len(preview(big, 300)) <= 300 + len("...[truncated 99999 chars]")
    assert "list of 1000" in preview(big["list"])
    assert preview(MISSING).startswith("missing")


def context(**outputs: str) -> SubstitutionContext:
    return SubstitutionContext("quiet cafe for kids", ITEMS, outputs)


def test_anot_sub_010_item_variables_with_paths():
    filled = substitute("k1={(context)}[1][attributes][GoodForKids], h2={(input)}[2][attributes][Ambience][hipster]", context())
    assert filled == "k1=True, h2=False"


def test_anot_sub_020_star_paths_list_every_item_one_indexed():
    assert substitute("{(items)}[*][attributes][WiFi]", context()) == "1=free, 2=no, 3=missing"


def test_anot_sub_030_query_step_outputs_and_whole_items():
    filled = substitute("Q: {(query)}; c1={(c1)}[not a path]", context(c1="[1, 3]"))
    assert filled == "Q: quiet cafe for kids; c1=[1, 3][not a path]"
    everything = substitute("{(items)}", context())
    assert everything.splitlines()[0].startswith("1: {name=A, attributes={GoodForKids=True")


def test_anot_sub_040_each_substitution_is_capped():
    ctx = SubstitutionContext("q" * 50, ITEMS, {"c1": "y" * 500}, max_chars=20)
    filled = substitute("{(c1)}|{(query)}", ctx)
    first, second = filled.split("|")
    assert first == "y" * 20 + "...[truncated 480 chars]"
    assert second == "q" * 20 + "...[truncated 30 chars]"


@pytest.mark.parametrize(
    ("prompt", "reason"),
    [
        ("{(items)}[9][name]", "1-indexed"),
        ("{(items)}[1][__init__]", "'__'"),
        ("{(context)}[1][reviews][first]", "index it with a number"),
        ("{(c7)}", "no step 'c7' has produced an output"),
    ],
)
def test_anot_sub_050_bad_paths_and_unknown_outputs_raise_naming_the_step(prompt, reason):
    with pytest.raises(SubstitutionError, match=reason) as info:
        substitute(prompt, context(c1="x"), step_id="c2")
    assert info.value.step_id == "c2" and "step 'c2'" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_anot_sub_060_nothing_in_a_prompt_is_evaluated():
    prompt = "{(items)}[1][name] __import__('os').system('x') {{(query)}}"
    assert substitute(prompt, context()) == "A __import__('os').system('x') {quiet cafe for kids}"
