"""Who may use the console and change state: plain HTTP against the real server (``llamabot console``)."""

from __future__ import annotations

import time

import httpx
import pytest
from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.durable.runs import show_run
from tests.console.conftest import ConsoleServer, start_run


def wait_until_waiting(db: str, run_id: str) -> None:
    deadline = time.monotonic() + 30
    while not show_run(run_id, db).waiting:
        assert time.monotonic() < deadline, f"run {run_id} never waited for an approval"
        time.sleep(0.2)


@pytest.fixture
def guarded(db, tmp_path):
    server = ConsoleServer(db, tmp_path / "console.log", "--token", "s3cret-token")
    yield server
    server.stop()


def test_con_sec_010_a_request_for_another_host_name_is_refused_without_a_token(console):
    assert httpx.get(f"{console.url}/runs").status_code == 200
    assert httpx.get(f"{console.url}/runs", headers={"Host": "localhost:1"}).status_code == 200
    refused = httpx.get(f"{console.url}/runs", headers={"Host": "attacker.example"})
    assert refused.status_code == 421 and "127.0.0.1" in refused.text


def test_con_sec_020_binding_another_address_without_a_token_is_refused(db, monkeypatch):
    monkeypatch.delenv("LLAMABOT_CONSOLE_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["console", "--db", db, "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "needs a token" in result.output or "set a token" in result.output


def test_con_sec_030_with_a_token_every_request_needs_it(guarded):
    assert httpx.get(f"{guarded.url}/runs").status_code == 401
    assert httpx.get(f"{guarded.url}/static/console.css").status_code == 401
    assert httpx.get(f"{guarded.url}/runs?token=wrong").status_code == 401
    assert httpx.get(f"{guarded.url}/runs", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
    with httpx.Client(base_url=guarded.url) as browser_like:
        opened = browser_like.get("/runs?token=s3cret-token&status=waiting")
        assert opened.status_code == 303 and opened.headers["location"] == "/runs?status=waiting"  # token dropped
        assert "HttpOnly" in opened.headers["set-cookie"] and "SameSite=Strict" in opened.headers["set-cookie"]
        assert browser_like.get("/runs?status=waiting").status_code == 200  # the cookie carries it now


def test_con_sec_040_a_post_without_the_csrf_token_changes_nothing(console, worker, db):
    start_run(db, "dave", "pay-dave")
    with httpx.Client(base_url=console.url) as user:
        user.get("/runs")  # sets the CSRF cookie
        wait_until_waiting(db, "pay-dave")
        csrf = user.cookies["llamabot_csrf"]
        assert user.post("/runs/pay-dave/approve", data={"request": "1"}).status_code == 403
        assert user.post("/runs/pay-dave/approve", data={"request": "1", "csrf": "guess"}).status_code == 403
        foreign = user.post("/runs/pay-dave/reject", data={"request": "1", "csrf": csrf},
                            headers={"Origin": "http://attacker.example"})
        assert foreign.status_code == 403
        assert show_run("pay-dave", db).waiting is not None  # still waiting: nothing was decided
        decided = user.post("/runs/pay-dave/reject", data={"request": "1", "csrf": csrf, "reason": "no"},
                            headers={"Origin": console.url})
        assert decided.status_code == 303
        second = user.post("/runs/pay-dave/approve", data={"request": "1", "csrf": csrf, "arguments": ""})
        assert second.status_code == 409
        assert "no longer waits" in second.text or "already" in second.text


def test_con_sec_050_state_changes_are_posts_only(console):
    assert httpx.get(f"{console.url}/runs/x/approve").status_code == 405
    assert httpx.get(f"{console.url}/runs/x/reject").status_code == 405


def test_con_appr_050_a_decision_made_on_a_page_of_another_approval_is_refused(console, worker, db):
    start_run(db, "erin", "pay-erin")
    wait_until_waiting(db, "pay-erin")
    with httpx.Client(base_url=console.url) as user:
        user.get("/runs")
        csrf = user.cookies["llamabot_csrf"]
        stale = user.post("/runs/pay-erin/approve", data={"request": "2", "csrf": csrf, "arguments": ""})
        assert stale.status_code == 409 and "now waits for approval #1" in stale.text
        assert show_run("pay-erin", db).waiting is not None
        bad = user.post("/runs/pay-erin/approve", data={"request": "1", "csrf": csrf, "arguments": "{not json"})
        assert bad.status_code == 409 and "not JSON" in bad.text
        assert show_run("pay-erin", db).waiting is not None


def test_con_cli_010_an_unreachable_database_exits_1_with_its_error(tmp_path):
    result = CliRunner().invoke(app, ["console", "--db", f"sqlite:///{tmp_path}/missing/dir/runs.sqlite"])
    assert result.exit_code == 1 and "error" in result.output


def test_con_sec_060_every_response_forbids_framing_and_foreign_scripts(console):
    for path in ("/runs", "/static/console.js", "/runs/no-such-run"):
        headers = httpx.get(f"{console.url}{path}").headers
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert "script-src 'self'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY" and headers["referrer-policy"] == "same-origin"
