"""One small end-to-end search on the embedded model (TOT-E2E-010). Slow: marked ``local_model``."""

from __future__ import annotations

import pytest

from llamabot.evals.game24.check import check_game24
from llamabot.evals.game24.prompts import Game24Prompts
from llamabot.reasoning.tot.graph import ToTBot

ENDINGS = {"success", "threshold", "max_depth", "max_nodes", "max_duration", "max_model_calls", "converged"}


@pytest.mark.local_model
def test_tot_e2e_010_a_small_search_runs_end_to_end_on_the_embedded_model(local_model_name):
    # Three numbers, so two steps (depth 2) finish an expression; branching 2 keeps it to about six calls.
    bot = ToTBot(model=local_model_name, prompts=Game24Prompts(), branching_factor=2, max_depth=2, min_depth=2,
                 max_nodes=7, max_tokens=128)
    result = bot("2 3 4")
    assert result.termination.status == "completed", result.diagnostics
    assert result.termination.reason in ENDINGS
    assert result.termination.node_count >= 3 and result.usage["total_tokens"] > 0
    assert result.diagnostics["parser_mode"] in ("json", "fenced_json", "embedded_json", "numbered")
    assert len(bot.last_trace.of_kind("model_call")) >= 2
    assert isinstance(check_game24("2 3 4", result.answer or ""), bool)  # judged, whatever it is
    assert "flowchart TD" in str(result.to_mermaid())
