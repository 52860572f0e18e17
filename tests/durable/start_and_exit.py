"""Start one durable run in this process, wait until the model log shows a line, then end the script normally
(the process the exit tests watch).

    python -m tests.durable.start_and_exit DB RUN_ID QUERY LINE
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from llamabot.durable import Durable


def main() -> None:
    db, run_id, query, line = sys.argv[1:5]
    Durable("tests.durable.agents:make_agent", db=db).start(query, run_id=run_id)
    log = Path(os.environ["DURABLE_MODEL_LOG"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (log.exists() and line in log.read_text().splitlines()):
        time.sleep(0.01)
    print("exiting", flush=True)  # the script ends here, with the run's next model call in flight


if __name__ == "__main__":
    main()
