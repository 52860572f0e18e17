"""AoT end to end on the embedded model: the plan is grammar-constrained, so it always parses."""

from __future__ import annotations

import pytest

from llamabot.reasoning.aot import AoTBot

pytestmark = pytest.mark.local_model


def test_aot_e2e_010_the_embedded_model_plans_and_the_program_computes(local_model_name):
    bot = AoTBot(model=local_model_name)
    result = bot("What is (15 + 7) * 3 - 10?")
    assert result.plan.final is not None  # parsed and validated (re-plans allowed, bounded)
    assert all(r.status == "ok" for r in result.record.atoms.values())
    assert result.answer == 56
    assert all(s.attributes["reply"].content for s in result.trace.of_kind("model_call"))
