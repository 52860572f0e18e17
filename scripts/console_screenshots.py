"""Screenshots of the run console for docs/design/console/ (PNG, 1200x760).

    python scripts/console_screenshots.py

A SQLite database in a temporary directory with runs of every status (succeeded, failed span inside a succeeded
run, waiting for an approval, queued: the worker's two slots are taken), a real ``llamabot worker``, ``llamabot console`` on a free loopback port,
and headless Chromium (Debian's ``chromium``) through Playwright.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from llamabot.durable import Durable, shutdown  # noqa: E402
from llamabot.durable.runs import client, enqueue, show_run  # noqa: E402
from tests.console.conftest import ConsoleServer  # noqa: E402
from tests.durable.workers import Worker  # noqa: E402

OUT = ROOT / "docs" / "design" / "console"
BROWSER = os.environ.get("LLAMABOT_CHROMIUM", "/usr/bin/chromium")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'runs.sqlite'}"
        os.environ["CONSOLE_CALLS"] = "3"
        durable = Durable("tests.console.bots:make_failing_agent", db=db)
        durable.run("invoice-7731", run_id="lookup-invoice")
        Durable("tests.console.bots:make_long_agent", db=db).run("ledger", run_id="ledger-3-steps")
        shutdown()
        with client(db) as via:
            for run_id, who in (("pay-alice", "alice"), ("pay-bob", "bob")):
                enqueue("tests.console.bots:make_payment_agent", who, {}, run_id, via=via)
        worker = Worker(db, "worker-1", Path(tmp) / "worker.log", concurrency=2)
        try:
            while not (show_run("pay-alice", db).waiting and show_run("pay-bob", db).waiting):
                time.sleep(0.2)
            with client(db) as via:  # both of the worker's slots wait for approvals: this one stays queued
                enqueue("tests.console.bots:make_payment_agent", "carol", {}, "pay-carol-queued", via=via)
            server = ConsoleServer(db, Path(tmp) / "console.log")
            try:
                shoot(server.url)
            finally:
                server.stop()
        finally:
            worker.stop(signal.SIGTERM)


def shoot(url: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        page.goto(f"{url}/runs")
        page.screenshot(path=str(OUT / "runs-list.png"))
        page.goto(f"{url}/runs/pay-alice")
        page.screenshot(path=str(OUT / "run-waiting.png"))
        page.goto(f"{url}/approvals")
        page.screenshot(path=str(OUT / "approvals.png"))
        page.goto(f"{url}/runs/lookup-invoice")
        page.locator("details.cat-tool_call.failed summary").first.click()
        page.locator("details.cat-tool_call.failed pre.attributes").first.wait_for()
        page.locator("#trace").scroll_into_view_if_needed()
        page.screenshot(path=str(OUT / "run-trace-error.png"))
        page.locator("svg.graph").screenshot(path=str(OUT / "run-graph.png"))
        browser.close()
    for name in ("runs-list", "run-waiting", "approvals", "run-trace-error", "run-graph"):
        print(f"{OUT / name}.png: {(OUT / f'{name}.png').stat().st_size // 1024} kB")


if __name__ == "__main__":
    main()
