"""``llamabot worker`` processes for the tests: started through the CLI, their stderr kept in a file (a pipe
nobody reads would fill up and block a long-running worker)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from llamabot.durable.runs import client, enqueue
from tests.durable.conftest import PYTHON, subprocess_env

WORKER = "from llamabot.cli import main; main()"


class Worker:
    """One worker process and its stderr log (``options``: more command-line options, ``env``: its environment)."""

    def __init__(self, db: str, name: str, log: Path, concurrency: int = 10, *options: str, **env: str):
        self.name, self.log = name, log
        self.proc = subprocess.Popen([PYTHON, "-c", WORKER, "worker", "--db", db, "--executor-id", name,
                                      "--concurrency", str(concurrency), *options], env=subprocess_env(**env),
                                     stderr=log.open("w"), stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while "worker ready" not in self.text():
            assert self.proc.poll() is None and time.monotonic() < deadline, f"{name} did not start: {self.text()}"
            time.sleep(0.05)

    def text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def stop(self, sig: int, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


def enqueue_runs(db: str, count: int, prefix: str) -> list[str]:
    with client(db) as via:
        return [enqueue("tests.durable.agents:make_agent", f"{prefix}{i}", {}, f"{prefix}{i}", via=via)
                for i in range(count)]
