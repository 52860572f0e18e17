"""Start one durable run in this process, wait until the model log shows a line, then end the script normally
(the process the exit tests watch).

    python -m tests.durable.start_and_exit DB RUN_ID QUERY LINE [async]

``async``: the run is started with ``astart`` inside ``asyncio.run(main())``, which ends with the run in flight.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from llamabot.durable import Durable


def _seen(line: str) -> bool:
    log = Path(os.environ["DURABLE_MODEL_LOG"])
    return log.exists() and line in log.read_text().splitlines()


async def _amain(db: str, run_id: str, query: str, line: str) -> None:
    await Durable("tests.durable.agents:make_agent", db=db).astart(query, run_id=run_id)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _seen(line):
        await asyncio.sleep(0.01)


def main() -> None:
    db, run_id, query, line = sys.argv[1:5]
    if sys.argv[5:] == ["async"]:
        asyncio.run(_amain(db, run_id, query, line))
    else:
        Durable("tests.durable.agents:make_agent", db=db).start(query, run_id=run_id)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _seen(line):
            time.sleep(0.01)
    print("exiting", flush=True)  # the script ends here, with the run's next model call in flight


if __name__ == "__main__":
    main()
