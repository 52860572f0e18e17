"""The example service in durable mode, for the shutdown test: ``uvicorn tests.durable.service_app:app`` with
``$DURABLE_DB`` naming the database."""

from __future__ import annotations

import os

from examples.agent_service import create_app
from llamabot.durable import Durable

app = create_app(durable=Durable("tests.durable.agents:make_agent", db=os.environ["DURABLE_DB"],
                                 executor_id="service", worker_concurrency=2))
