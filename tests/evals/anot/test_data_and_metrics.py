"""The philly_cafes loader on the fixture copy of the dev data (ANOT-DATA-*) and the metrics (ANOT-MET-*)."""

from __future__ import annotations

import json

import pytest

from llamabot.evals.anot import load_dataset
from llamabot.evals.anot.data import DataFormatError, parse_attribute, select_candidates
from llamabot.evals.anot.metrics import hits_at, reciprocal_rank, summarize
from tests.reasoning.anot.helpers import FIXTURE_DATA


@pytest.fixture(scope="module")
def dataset():
    return load_dataset(FIXTURE_DATA)


def test_anot_data_010_restaurants_load_with_attributes_parsed_as_literals(dataset):
    assert len(dataset.items) == 12
    first = dataset.items[0]
    assert first["name"] == "Milkcrate Cafe"
    attributes = first["attributes"]
    assert attributes["WiFi"] == "free" and attributes["GoodForKids"] is True and attributes["RestaurantsPriceRange2"] == 1
    assert attributes["Ambience"]["hipster"] is True and attributes["GoodForMeal"]["brunch"] is True
    assert set(first) == {"name", "stars", "review_count", "categories", "attributes", "hours", "reviews"}


def test_anot_data_020_attribute_strings_are_never_evaluated():
    assert parse_attribute("u'free'") == "free"
    assert parse_attribute("None") is None
    assert parse_attribute("__import__('os').system('echo hacked')") == "__import__('os').system('echo hacked')"
    assert parse_attribute("(lambda: 1)()") == "(lambda: 1)()"
    assert parse_attribute("[" * 5000) == "[" * 5000  # too long to parse: kept as text
    assert parse_attribute(True) is True


def test_anot_data_030_reviews_are_attached_in_file_order_with_reviewer_names(dataset):
    reviews = dataset.items[0]["reviews"]
    assert len(reviews) == 3 and all("text" in r and "business_id" not in r for r in reviews)
    assert reviews[0]["user_name"] == "Kevin" and reviews[0]["friends"][:2] == ["Ezra", "Jaxon"]


def test_anot_data_040_requests_carry_their_zero_based_gold_index(dataset):
    assert [(r.id, r.gold_idx) for r in dataset.requests] == [("R01", 0), ("R11", 3), ("R41", 9), ("R81", 0), ("R91", 10)]
    assert dataset.requests[0].group == "G01" and dataset.requests[0].shorthand.startswith("AND(drive_thru")
    assert dataset.names([0, 3]) == ["Milkcrate Cafe", dataset.items[3]["name"]]


def test_anot_data_050_candidates_include_gold_and_are_seeded(dataset):
    picks = select_candidates(12, 9, 5, 0, "R41")
    assert len(picks) == 5 == len(set(picks)) and 9 in picks
    assert picks == select_candidates(12, 9, 5, 0, "R41")
    assert picks != select_candidates(12, 9, 5, 1, "R41") or picks != select_candidates(12, 9, 5, 2, "R41")
    everything = select_candidates(12, 9, 50, 0, "R41")
    assert sorted(everything) == list(range(12))
    positions = {select_candidates(12, 0, 10, seed, "R01").index(0) for seed in range(20)}
    assert len(positions) > 3  # the gold item is not always in the same place
    with pytest.raises(ValueError, match="gold_idx 12"):
        select_candidates(12, 12, 5, 0, "x")


def test_anot_data_060_malformed_files_are_named(tmp_path):
    with pytest.raises(DataFormatError, match="restaurants.jsonl: file not found"):
        load_dataset(tmp_path)
    for name in ("restaurants.jsonl", "reviews.jsonl", "requests.jsonl", "groundtruth.jsonl"):
        (tmp_path / name).write_text((FIXTURE_DATA / name).read_text())
    (tmp_path / "groundtruth.jsonl").write_text(json.dumps({"request_id": "R01", "gold_idx": 99}) + "\n")
    with pytest.raises(DataFormatError, match=r"groundtruth.jsonl, line 1: gold_idx 99"):
        load_dataset(tmp_path)
    (tmp_path / "groundtruth.jsonl").write_text("{not json\n")
    with pytest.raises(DataFormatError, match="line 1: not valid JSON"):
        load_dataset(tmp_path)


def test_anot_met_010_hits_at_k_and_reciprocal_rank():
    ranking = [4, 2, 7]
    assert [hits_at(ranking, 2, k) for k in (1, 2, 3)] == [0.0, 1.0, 1.0]
    assert reciprocal_rank(ranking, 7) == pytest.approx(1 / 3) and reciprocal_rank(ranking, 9) == 0.0
    with pytest.raises(ValueError):
        hits_at(ranking, 2, 0)


def test_anot_met_020_summary_averages_over_requests():
    summary = summarize([([1, 2], 1), ([2, 1], 1), ([3], 1), ([], 1)])
    assert summary["n"] == 4
    assert summary["hits@1"] == 0.25 and summary["hits@2"] == 0.5 and summary["hits@5"] == 0.5
    assert summary["mrr"] == pytest.approx((1 + 0.5) / 4)
    assert summarize([])["mrr"] == 0.0
