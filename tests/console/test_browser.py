"""The console in a real browser (headless Chromium through Playwright) against a real server, worker and
SQLite database: a run waits for an approval, a person approves, edits or rejects it on the page, and the page
shows the run finish, live, with the answer. Requirement IDs: docs/design/console/console-EARS.md."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.console.conftest import start_run

WAIT_MS = 30_000


def open_waiting_run(page, console, db, who: str, run_id: str) -> None:
    """Start a payment to ``who``, then go from the runs list (reloaded until the worker has reached the
    approval) to the run's page."""
    start_run(db, who, run_id)
    page.goto(f"{console.url}/runs")
    row = page.locator(f'tr[data-run="{run_id}"]')
    for _ in range(150):
        if row.count() and row.locator('[data-status="waiting"]').count():
            break
        page.wait_for_timeout(200)
        page.reload()
    expect(row.locator('[data-status="waiting"]')).to_be_visible()
    row.get_by_role("link", name=run_id).click()
    expect(page.locator("#approval h3")).to_contain_text("transfer")


def test_con_appr_010_a_waiting_run_is_approved_in_the_browser_and_finishes_live(page, console, worker, db):
    open_waiting_run(page, console, db, "alice", "pay-alice")
    expect(page.locator("#approval textarea")).to_have_value(re.compile(r'"to": "alice"'))
    page.get_by_role("button", name="Approve").click()
    expect(page.locator(".flash")).to_contain_text("Approved")
    # no reload from here: the page follows the run over server-sent events
    expect(page.locator("#answer")).to_have_text("done: sent 10.0 to alice", timeout=WAIT_MS)
    expect(page.locator("#summary [data-status]")).to_have_text("succeeded")
    expect(page.locator("#decisions")).to_contain_text("approve #1 by console:")
    transfer = page.locator("details.cat-tool_call", has=page.locator("summary .name", has_text="transfer"))
    transfer.locator("summary").click()  # its details load when it opens
    expect(transfer.locator("pre.attributes")).to_contain_text('"to": "alice"')
    expect(transfer.locator("pre.attributes")).to_contain_text('"result": "sent 10.0 to alice"')


def test_con_appr_020_a_rejected_call_shows_the_model_the_reason(page, console, worker, db):
    open_waiting_run(page, console, db, "mallory", "pay-mallory")
    page.locator('input[name="reason"]').fill("not a known payee")
    page.get_by_role("button", name="Reject").click()
    expect(page.locator("#answer")).to_contain_text("not a known payee", timeout=WAIT_MS)
    expect(page.locator("#answer")).not_to_contain_text("sent 10.0")
    expect(page.locator("#decisions")).to_contain_text("reject #1")


def test_con_appr_030_edited_arguments_are_what_the_tool_runs_with(page, console, worker, db):
    open_waiting_run(page, console, db, "bob", "pay-bob")
    page.locator("#approval textarea").fill('{"amount": 5, "to": "bob"}')
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#answer")).to_have_text(re.compile(r"done: sent 5(\.0)? to bob"), timeout=WAIT_MS)


def test_con_esc_010_a_hostile_argument_renders_as_text(page, console, worker, db):
    hostile = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
    open_waiting_run(page, console, db, hostile, "pay-hostile")
    expect(page.locator("#approval textarea")).to_have_value(re.compile(re.escape('"to": "<script>window.pwned')))
    expect(page.locator("pre.query")).to_have_text(hostile)
    assert page.locator("#live img, #live script").count() == 0
    page.goto(f"{console.url}/approvals")
    expect(page.locator('article[data-run="pay-hostile"] p.query')).to_contain_text("<script>")
    page.goto(f"{console.url}/runs")
    expect(page.locator('tr[data-run="pay-hostile"] td.query')).to_contain_text("<script>")
    assert page.evaluate("window.pwned") is None


def test_con_appr_040_the_approvals_page_decides_too(page, console, worker, db):
    open_waiting_run(page, console, db, "carol", "pay-carol")
    page.goto(f"{console.url}/approvals")
    card = page.locator('article[data-run="pay-carol"]')
    expect(card.locator("code.tool")).to_have_text("transfer")
    card.get_by_role("button", name="Approve").click()
    expect(page.locator("#answer")).to_have_text("done: sent 10.0 to carol", timeout=WAIT_MS)


def test_con_run_010_a_run_is_cancelled_from_its_page_after_a_confirmation(page, console, worker, db):
    open_waiting_run(page, console, db, "frank", "pay-frank")
    page.once("dialog", lambda dialog: dialog.dismiss())  # "no": nothing happens
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#summary [data-status]")).to_have_text("waiting")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator(".flash")).to_contain_text("Cancelled")
    expect(page.locator("#summary [data-status]")).to_have_text("cancelled", timeout=WAIT_MS)
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
