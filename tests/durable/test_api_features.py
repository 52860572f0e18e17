"""Durable runs of the public API's features: a typed result is stored and returned typed, deps given to a durable
run are JSON data stored with it (a live handle is refused with NotStorableError), and an agent used as a tool is
one durable step of the outer run."""

from __future__ import annotations

import pytest

from llamabot.durable import Durable
from llamabot.durable.errors import NotStorableError
from tests.durable.api_bots import Point


def test_api_dur_010_a_typed_result_is_stored_and_returned_typed(tmp_path):
    agent = Durable("tests.durable.api_bots:make_typed", db=f"sqlite:///{tmp_path / 'runs.sqlite'}")
    assert agent.run("whose?", run_id="typed-1", deps="alice") == Point(x=1, y=5)
    assert agent.result("typed-1") == Point(x=1, y=5)


def test_api_dur_020_deps_must_be_json_data(tmp_path):
    agent = Durable("tests.durable.api_bots:make_typed", db=f"sqlite:///{tmp_path / 'runs.sqlite'}")
    with pytest.raises(NotStorableError, match="deps"):
        agent.run("whose?", deps=object())


def test_api_dur_030_an_agent_used_as_a_tool_is_one_step_of_the_outer_run(tmp_path):
    agent = Durable("tests.durable.api_bots:make_outer", db=f"sqlite:///{tmp_path / 'runs.sqlite'}")
    assert agent.run("q", run_id="outer-1") == "outer: inner says hi"
    names = [name for _, name in agent.show("outer-1").steps]
    assert names == ["model:scripted", "tool:helper", "model:scripted", "tool:respond_to_user"]
