"""The run console: how long its pages take on a big run and a big database.

    python benchmarks/console_page.py [--quick]

- ``run_page_s``: the median time to fetch the whole HTML of one run's page over HTTP (``llamabot console``, a
  real uvicorn server on loopback, SQLite) for a durable run of ``spans`` spans (2,002: 666 tool calls and the
  answer, each decision a decision, model call and tool call span). The page draws the first 500 spans of the
  tree and links to the rest. Target < 1 s.
- ``run_page_browser_s``: the same page in headless Chromium (Playwright), from navigation to the ``load``
  event: fetch, parse and layout. Target < 1 s.
- ``run_page_all_s`` / ``run_page_all_browser_s``: the same with every span drawn (``?all=1``).

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): 1,000 runs in the list instead of 10,000; the same 2,002-span run.
- ``list_page_s`` / ``list_deep_page_s``: the runs list with ``runs`` runs in the database (10,000; quick:
  1,000): the first page, and the page after following the cursor to the last run's page (keyset pagination).

The run is a real durable run (``tests/console/bots.py: make_long_agent``, a scripted model); the runs of the
list are enqueued, never executed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from llamabot.durable import Durable, shutdown  # noqa: E402
from llamabot.durable.runs import client, enqueue  # noqa: E402
from tests.console.conftest import ConsoleServer  # noqa: E402

CALLS = 666  # 3 * (666 + 1) + 1 = 2,002 spans


def timed_get(url: str, repeat: int = 5) -> float:
    httpx.get(url, timeout=60).raise_for_status()  # warm: templates compiled, connections open
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        httpx.get(url, timeout=60).raise_for_status()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def browser_load(url: str, repeat: int = 3) -> float:
    chromium = os.environ.get("LLAMABOT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("the browser timings need Chromium: apt-get install -y chromium (or set $LLAMABOT_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(url, wait_until="load")
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            page.goto(url, wait_until="load")
            times.append(time.perf_counter() - start)
        browser.close()
    return statistics.median(times)


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 runs in the list instead of 10,000")
    quick = quick_mode(parser.parse_args().quick)
    runs = 1_000 if quick else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'runs.sqlite'}"
        os.environ["CONSOLE_CALLS"] = str(CALLS)
        started = time.perf_counter()
        Durable("tests.console.bots:make_long_agent", db=db).run("a long run", run_id="long-run")
        shutdown()
        print(f"durable run of {CALLS} tool calls: {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        with client(db) as via:
            for i in range(runs):
                enqueue("tests.console.bots:make_payment_agent", f"q{i}", {}, f"queued-{i:05d}", via=via)
        print(f"enqueued {runs} runs: {time.perf_counter() - started:.1f} s")
        server = ConsoleServer(db, Path(tmp) / "console.log")
        try:
            page = httpx.get(f"{server.url}/runs/long-run?all=1", timeout=60).text
            spans = page.count('<details class="span')
            run_page_s = timed_get(f"{server.url}/runs/long-run")
            browser_s = browser_load(f"{server.url}/runs/long-run")
            run_page_all_s = timed_get(f"{server.url}/runs/long-run?all=1")
            all_browser_s = browser_load(f"{server.url}/runs/long-run?all=1")
            list_page_s = timed_get(f"{server.url}/runs")
            cursor, pages = None, 0
            while True:  # follow the cursors to the last page
                url = f"{server.url}/runs" + (f"?after={cursor}" if cursor else "")
                text = httpx.get(url, timeout=60).text
                pages += 1
                marker = text.find('rel="next" href="/runs?after=')
                if marker < 0:
                    break
                cursor = text[marker + len('rel="next" href="/runs?after='):].split('"')[0].replace("%3A", ":")
                last_url = url
            list_deep_page_s = timed_get(last_url)
        finally:
            server.stop()
    print(f"run page with every span: {spans} spans, {len(page) / 1e6:.2f} MB of HTML; list: {pages} pages of 50")
    print(f"RESULT run_page_s={run_page_s:.3f} run_page_browser_s={browser_s:.3f} run_page_all_s={run_page_all_s:.3f} "
          f"run_page_all_browser_s={all_browser_s:.3f} spans={spans} "
          f"list_page_s={list_page_s:.3f} list_deep_page_s={list_deep_page_s:.3f} runs={runs + 1} quick={int(quick)}")


if __name__ == "__main__":
    main()
