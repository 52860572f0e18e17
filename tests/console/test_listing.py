"""The runs list: newest first, keyset-paginated (every run once, in order, across pages), filtered by status."""

from __future__ import annotations

import httpx
import pytest

from llamabot.console.reader import RunsReader, parse_cursor
from llamabot.durable.runs import client, enqueue


@pytest.fixture
def queued(db):
    """130 runs on the queue (no worker: they stay queued), enqueued fast enough to share creation times."""
    with client(db) as via:
        ids = [enqueue("tests.console.bots:make_payment_agent", f"q{i}", {}, f"run-{i:03d}", via=via)
               for i in range(130)]
    return ids


def test_con_list_010_pages_hold_every_run_once_newest_first(db, queued):
    reader = RunsReader(db)
    try:
        seen, cursor, pages = [], None, 0
        while True:
            page = reader.page(cursor=cursor, size=50)
            seen += [(r.created_ms, r.run_id) for r in page.rows]
            pages += 1
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert pages == 3
        assert sorted(r for _, r in seen) == sorted(queued)  # each once
        assert seen == sorted(seen, reverse=True)  # newest first, ties by run id
    finally:
        reader.close()


def test_con_list_020_a_status_filter_shows_only_that_status(db, queued):
    reader = RunsReader(db)
    try:
        assert len(reader.page("queued", size=200).rows) == 130
        assert {r.status for r in reader.page("queued", size=10).rows} == {"queued"}
        assert reader.page("succeeded").rows == [] and reader.page("waiting").rows == []
        with pytest.raises(KeyError):
            reader.page("bogus")
    finally:
        reader.close()


def test_con_list_030_a_malformed_cursor_is_refused(db):
    with pytest.raises(ValueError, match="cursor"):
        parse_cursor("yesterday")


def test_con_list_040_the_list_page_links_to_the_next_page(console, queued):
    first = httpx.get(f"{console.url}/runs?status=queued")
    assert first.status_code == 200 and first.text.count('<tr data-run="') == 50
    assert 'rel="next"' in first.text
    assert httpx.get(f"{console.url}/runs?status=bogus").status_code == 400
    assert httpx.get(f"{console.url}/runs?after=nonsense").status_code == 400


def test_con_list_050_a_run_id_typed_in_the_header_opens_that_run(console, queued):
    found = httpx.get(f"{console.url}/find", params={"run": " run-007 "})
    assert found.status_code == 303 and found.headers["location"] == "/runs/run-007"
    assert httpx.get(f"{console.url}/find", params={"run": "a/b?c"}).headers["location"] == "/runs/a%2Fb%3Fc"
    assert 'action="/find"' in httpx.get(f"{console.url}/runs").text
