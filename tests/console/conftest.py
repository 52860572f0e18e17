"""Fixtures of the console tests: a SQLite runs database, a real ``llamabot worker``, the console served by
``llamabot console`` on a free loopback port (real uvicorn), and headless Chromium driven by Playwright.

Chromium is Debian's package (Playwright's own browser download is not reachable here): ``apt-get install -y
chromium``, as ``.ci/run`` does. A missing browser fails the browser tests with that hint; nothing is skipped.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from llamabot.durable.runs import client, enqueue
from tests.durable.conftest import PYTHON, subprocess_env
from tests.durable.workers import Worker

CLI = "from llamabot.cli import main; main()"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConsoleServer:
    """``llamabot console`` in a subprocess, answering on ``url``."""

    def __init__(self, db: str, log: Path, *args: str, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.proc = subprocess.Popen([PYTHON, "-c", CLI, "console", "--db", db, "--port", str(self.port), *args],
                                     env=subprocess_env(**(env or {})), stderr=log.open("w"),
                                     stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, f"the console exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"the console did not answer: {log.read_text()}"
            try:
                httpx.get(self.url + "/static/console.css", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# One database, worker and console per test file (each test uses its own run ids): a worker and a console take
# seconds to start.
@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("console")


@pytest.fixture(scope="module")
def db(folder) -> str:
    return f"sqlite:///{folder / 'runs.sqlite'}"


@pytest.fixture(scope="module")
def worker(db, folder):
    started = Worker(db, "console-worker", folder / "worker.log", concurrency=4)
    yield started
    started.stop(signal.SIGTERM)


@pytest.fixture(scope="module")
def console(db, folder):
    server = ConsoleServer(db, folder / "console.log")
    yield server
    server.stop()


def start_run(db: str, query: str, run_id: str, factory: str = "tests.console.bots:make_payment_agent") -> str:
    with client(db) as via:
        return enqueue(factory, query, {}, run_id, via=via)


def chromium_path() -> str:
    """Debian's Chromium (or ``$LLAMABOT_CHROMIUM``); fails with the install hint when it is missing."""
    found = os.environ.get("LLAMABOT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("the console's browser tests need Chromium: apt-get install -y chromium (as .ci/run does), "
                    "or set $LLAMABOT_CHROMIUM to a Chromium binary", pytrace=False)
    return found


# Module scope, not session: while Playwright's sync API is open it keeps an event loop running in this thread,
# and every later test that runs one of its own (asyncio.run) would fail with "Cannot run the event loop while
# another loop is running".
@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail('the console\'s browser tests need Playwright: pip install -e ".[dev]"', pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), headless=True,
                                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    yield opened
    context.close()

