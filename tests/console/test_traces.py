"""What a durable run stores for its page (llamabot/durable/traces.py) and how the page shows it."""

from __future__ import annotations

import time

import httpx
import pytest

from llamabot.console.reader import RunsReader
from llamabot.durable import Durable, approve, show_run, shutdown, wait_result


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


def test_con_trace_040_a_long_trace_draws_its_first_spans_and_links_to_all(db, console, monkeypatch):
    monkeypatch.setenv("CONSOLE_CALLS", "200")  # 3 * 201 + 1 = 604 spans
    Durable("tests.console.bots:make_long_agent", db=db).run("long", run_id="long-1")
    shutdown()
    first = httpx.get(f"{console.url}/runs/long-1").text
    assert first.count('<details class="span') == 500
    assert "104 more spans not shown" in first and "/runs/long-1?all=1" in first
    everything = httpx.get(f"{console.url}/runs/long-1?all=1").text
    assert everything.count('<details class="span') == 604 and "not shown" not in everything


def test_con_trace_050_a_span_s_details_are_its_attributes_escaped(db, console):
    Durable("tests.console.bots:make_failing_agent", db=db).run("<b>k3</b>", run_id="lookup-3")
    shutdown()
    spans = RunsReader(db)
    try:
        tool = next(s for s in spans.spans("lookup-3") if s.name == "lookup")
    finally:
        spans.close()
    details = httpx.get(f"{console.url}/runs/lookup-3/spans/{tool.trace_id}/{tool.span_id}").text
    assert "&lt;b&gt;k3&lt;/b&gt;" in details and "<b>" not in details
    assert httpx.get(f"{console.url}/runs/lookup-3/spans/{tool.trace_id}/9999").status_code == 404


def test_con_trace_060_aot_atoms_tot_steps_and_anot_phases_are_on_the_page(db, console):
    from tests.reasoning.anot.helpers import ITEMS

    Durable("tests.durable.test_runs:make_aot", db=db).run("What is (15 + 7) * 3 - 10?", run_id="aot-page")
    Durable("tests.durable.test_runs:make_tot", db=db).run("4 9 10 13", run_id="tot-page")
    Durable("tests.durable.test_runs:make_anot", db=db).run("kids and cozy", items=ITEMS, run_id="anot-page")
    shutdown()
    for run_id, kinds in (("aot-page", ("layer", "atom", "report")), ("tot-page", ("tot_step", "tot_update")),
                          ("anot-page", ("phase", "lwt_step"))):
        html = httpx.get(f"{console.url}/runs/{run_id}").text
        shown = {kind for kind in kinds if f'<span class="kind">{kind}</span>' in html}
        assert shown == set(kinds), f"{run_id}: {set(kinds) - shown} not on the page"


def wait_for(condition, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_con_trace_070_a_run_parked_by_a_stopping_process_is_not_shown_failed(db, console):
    Durable("tests.console.bots:make_payment_agent", db=db).start("gina", run_id="pay-gina")
    wait_for(lambda: show_run("pay-gina", db).waiting, "the approval")
    shutdown(grace_s=1)  # the process stops: the run is parked in its wait, PENDING
    parked = httpx.get(f"{console.url}/runs/pay-gina").text
    assert "parked: its process stopped" in parked and 'class="span cat-run parked' in parked
    assert " failed" not in parked.split('id="trace"')[1]
    Durable("tests.console.bots:make_payment_agent", db=db)  # the same executor id: it recovers the run
    wait_for(lambda: show_run("pay-gina", db).waiting, "the approval, again")
    approve("pay-gina", db=db)
    assert wait_result("pay-gina", db) == "done: sent 10.0 to gina"
    shutdown()
    again = httpx.get(f"{console.url}/runs/pay-gina").text
    assert "Execution 1" in again and "Execution 2" in again


def test_con_graph_010_the_bot_s_graph_is_drawn_with_its_source_beside(db, console):
    Durable("tests.console.bots:make_failing_agent", db=db).run("k4", run_id="lookup-4")
    shutdown()
    html = httpx.get(f"{console.url}/runs/lookup-4").text
    svg = html.split('<svg class="graph"')[1].split("</svg>")[0]
    for label in ("decide", "lookup", "respond_to_user"):
        assert f">{label}</text>" in svg
    assert 'class="node start"' in svg and 'class="node terminal"' in svg and 'class="edge back"' in svg
    assert "flowchart LR" in html  # the mermaid source too


def test_con_graph_020_text_that_is_not_llamabot_s_flowchart_is_not_drawn():
    from llamabot.console.graph_view import draw

    assert draw(None) is None and draw("graph TD\n  A-->B") is None
    drawing = draw('flowchart LR\n    n0["a #quot;b#quot; #91;c#93;"]\n    n0 -->|"go"| n0\n    class n0 start')
    assert drawing.nodes[0].label == 'a "b" [c]' and drawing.edges[0].label == "go"


def test_con_trace_080_the_console_reads_a_postgresql_database_too(tmp_path):
    from tests.console.conftest import ConsoleServer
    from tests.durable.postgres import postgres_server

    with postgres_server() as url:
        db = url.rsplit("/", 1)[0] + "/console"
        Durable("tests.console.bots:make_failing_agent", db=db).run("k5", run_id="pg-lookup")
        shutdown()
        server = ConsoleServer(db, tmp_path / "console.log")
        try:
            listing = httpx.get(f"{server.url}/runs").text
            assert 'data-run="pg-lookup"' in listing and "240+60" in listing
            page = httpx.get(f"{server.url}/runs/pg-lookup").text
            assert 'class="span cat-tool_call failed' in page and "KeyError" in page
        finally:
            server.stop()
