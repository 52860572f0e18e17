"""Run one durable agent run in this process and print its result: the process the crash tests kill.

    python -m tests.durable.run_agent DB RUN_ID QUERY [FACTORY]
"""

from __future__ import annotations

import json
import signal
import sys

from llamabot.durable import Durable


def main() -> None:
    # Ctrl-C as in a terminal, however the test run was started (a shell's background job inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    db, run_id, query = sys.argv[1:4]
    factory = sys.argv[4] if len(sys.argv) > 4 else "tests.durable.agents:make_agent"
    result = Durable(factory, db=db).run(query, run_id=run_id)
    print(json.dumps({"result": result}), flush=True)


if __name__ == "__main__":
    main()
