"""A real PostgreSQL server for tests and benchmarks: initdb into a temporary directory, a free loopback port,
stopped and removed afterwards. As root the server runs as the ``postgres`` system user (it refuses root)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def pg_bin() -> Path:
    """The PostgreSQL server binaries (Debian layout first, then ``$PATH``)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL server binaries not found (initdb): apt-get install postgresql-15 "
                           "(.ci/run does it)")
    return Path(initdb).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres_server(database: str = "llamabot") -> Iterator[str]:
    """Run a throwaway server; yields ``postgresql://postgres@127.0.0.1:PORT/<database>``."""
    bindir = pg_bin()
    root = Path(tempfile.mkdtemp(prefix="llamabot-pg-"))
    data, port = root / "data", free_port()
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    run = lambda *cmd: subprocess.run([*as_postgres, *cmd], check=True, capture_output=True, text=True)  # noqa: E731
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200", "start")
        yield f"postgresql://postgres@127.0.0.1:{port}/{database}"
    finally:
        with contextlib.suppress(Exception):
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
