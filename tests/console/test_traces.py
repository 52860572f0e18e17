"""What a durable run stores for its page (llamabot/durable/traces.py) and how the page shows it."""

from __future__ import annotations

import httpx
import pytest

from llamabot.console.reader import RunsReader
from llamabot.durable import Durable, shutdown


@pytest.fixture(autouse=True)
def stop_runtime():
    yield
    shutdown()


def test_con_trace_010_a_durable_run_stores_its_spans_tokens_and_graph(db):
    Durable("tests.console.bots:make_failing_agent", db=db).run("k1", run_id="lookup-1")
    shutdown()  # writes the last rows
    reader = RunsReader(db)
    try:
        spans = reader.spans("lookup-1")
        kinds = [s.kind for s in spans]
        assert kinds[0] == "run" and "decision" in kinds and "model_call" in kinds and "tool_call" in kinds
        tool = next(s for s in spans if s.name == "lookup")
        assert tool.attributes["arguments"] == {"key": "k1"}
        assert "KeyError" in tool.error and tool.end_ms >= tool.start_ms
        assert all(s.end_ms is not None for s in spans)
        assert {s.parent_id for s in spans} - {s.span_id for s in spans} == {None}  # one tree
        row = reader.run("lookup-1")
        assert row.status == "succeeded" and row.model == "payments-model"
        assert (row.prompt_tokens, row.completion_tokens) == (240, 60) and row.cost == pytest.approx(0.003)
        assert "flowchart" in reader.graph("tests.console.bots:make_failing_agent")
    finally:
        reader.close()


def test_con_trace_020_the_run_page_shows_the_tree_with_errors_highlighted(db, console):
    Durable("tests.console.bots:make_failing_agent", db=db).run("k2", run_id="lookup-2")
    shutdown()
    html = httpx.get(f"{console.url}/runs/lookup-2").text
    assert 'class="span cat-tool_call failed' in html and "KeyError" in html
    assert 'class="span cat-run inner-failed' in html  # the failure is marked on the way down to it
    assert "120+30 tok" in html and "$0.0030" in html
    assert "flowchart" in html  # the graph's source
    listing = httpx.get(f"{console.url}/runs").text
    assert "240+60" in listing and "payments-model" in listing


def test_con_trace_030_an_unknown_run_is_a_404_page(console):
    missing = httpx.get(f"{console.url}/runs/no-such-run")
    assert missing.status_code == 404 and "no-such-run" in missing.text
