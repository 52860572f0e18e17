"""ANoTBot end to end on the scripted model: graph, results, stats, debug output, mermaid (ANOT-BOT-*, ANOT-DBG-*)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from llamabot import ScriptedModel
from llamabot.reasoning.anot import ANoTBot, AsyncANoTBot, lwt_mermaid, parse_lwt
from llamabot.reasoning.anot.debug import DebugLog, format_line, level_from_env

from .helpers import ITEMS, three_phase_responder

LINE = re.compile(r"^\[\d\d:\d\d:\d\d\.\d{3}\] \[(P1|P2|P3|RUN):R07\] ")


def run_with_log(level: int, **options) -> list[str]:
    lines: list[str] = []
    bot = ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=level, debug_sink=lines.append,
                  **options)
    bot("a kid-friendly cozy cafe", ITEMS, request_tag="R07")
    return lines


def test_anot_bot_010_the_graph_is_strategy_lwt_layers_rank():
    bot = ANoTBot(model=ScriptedModel(), debug=0)
    diagram = str(bot.to_mermaid())
    for edge in ('-->|"lwt"|', '-->|"execute"|', '-->|"layer"|', '-->|"rank"|'):
        assert edge in diagram
    assert '(["rank"]):::terminal' in diagram
    # phase 2's agent graph is part of the ANoT graph (ANOT-P2-130): its decision node, its tool nodes, the
    # terminal done leading on to lwt_end, and the "failed" exits to the fallback
    for label in ('["lwt"]', '["decide"]', '["lwt_insert"]', '(["done"]):::terminal', '["lwt_end"]'):
        assert label in diagram, label
    for edge in ('-->|"lwt_insert"|', '-->|"done"|', '-->|"decide"|', '-->|"failed"|', '-->|"default"|'):
        assert edge in diagram, edge
    assert set(bot.tool_nodes) == {"lwt_list", "lwt_insert", "lwt_set", "read", "done"}
    assert bot.decide_node.successors["done"] is bot.tool_nodes["done"]
    assert bot.tool_nodes["done"].successors["default"] is bot.lwt_end_node


def test_anot_bot_020_a_run_returns_ranking_strategy_script_outputs_and_phase_stats():
    result = ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=0)("kids and cozy", ITEMS)
    assert result.score_ranking.indices == (1, 3, 2)  # both conditions' outputs list 1 and 3
    assert result.ranking == result.score_ranking and result.best == 1  # rank_by="scores" is the default
    # the scores decided: the final step was never sent (ANOT-P3-130); its ranking is the score ranking
    assert "final" not in result.outputs and result.final_ranking.source == "scores"
    seed_way = ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=0, rank_by="final")("kids and cozy", ITEMS)
    assert seed_way.ranking.indices == (3, 1, 2) and seed_way.best == 3 and seed_way.ranking.source == "list"
    assert [s.id for s in result.steps] == ["c1", "c2", "final"]
    assert [s.kind for s in result.steps] == ["CHECK", "CHECK", "LLM"]
    # the condition steps are CHECKs: the program lists the kid-friendly items and those with a cozy review
    assert result.outputs == {"c1": "[1, 3]", "c2": "[1, 3]"}
    assert set(result.stats) == {"P1", "P2", "P3"}
    assert (result.stats["P1"].calls, result.stats["P2"].calls, result.stats["P3"].calls) == (1, 1, 0)
    assert seed_way.stats["P3"].calls == 1  # the final step only
    assert all(s.prompt_tokens > 0 and s.seconds >= 0 for s in (result.stats["P1"], result.stats["P2"]))
    assert result.totals.calls == 2
    record = json.loads(json.dumps(result.to_dict()))
    assert record["ranking"] == [1, 3, 2] and record["phases"]["P3"]["calls"] == 0
    assert record["final_ranking"] == [1, 3, 2] and record["final_ranking_source"] == "scores"
    seed_record = json.loads(json.dumps(seed_way.to_dict()))
    assert seed_record["final_ranking"] == [3, 1, 2] and seed_record["final_ranking_source"] == "list"
    assert "===STRATEGY===" in record["strategy_text"]


def test_anot_bot_030_sync_and_async_bots_agree():
    sync = ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=0)("q", ITEMS)
    asynchronous = asyncio.run(AsyncANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=0).arun("q", ITEMS))
    assert sync.ranking == asynchronous.ranking and sync.outputs == asynchronous.outputs and sync.lwt == asynchronous.lwt


async def test_anot_bot_040_concurrent_runs_on_one_bot_keep_their_own_state():
    bot = AsyncANoTBot(model=ScriptedModel(responder=three_phase_responder(), latency_s=0.001), debug=0)
    results = await asyncio.gather(*(bot.arun(f"query {i}", ITEMS[: 2 + i % 2]) for i in range(20)))
    assert len({r.trace.trace_id for r in results}) == 20
    for i, result in enumerate(results):
        assert result.n_items == 2 + i % 2
        assert result.totals.calls == 2  # CHECK condition steps, and the scores decide: no final step
        run_spans = [s for s in result.trace.of_kind("run") if s.name == "AsyncANoTBot"]
        assert [s.attributes["query"] for s in run_spans] == [f"query {i}"]


def test_anot_bot_050_each_run_needs_items():
    with pytest.raises(ValueError, match="at least one item"):
        ANoTBot(model=ScriptedModel(), debug=0)("q", [])


def test_anot_dbg_010_level_0_is_silent_and_1_is_a_summary_in_the_seed_format():
    assert run_with_log(0) == []
    summary = run_with_log(1)
    assert all(LINE.match(line) for line in summary), summary
    messages = [line.split("] ", 2)[2] for line in summary]
    assert len(messages) == 3
    assert messages[0] == "Planning for: a kid-friendly cozy cafe"
    assert messages[1] == "Final ranking: 1 (top-5 [1, 3, 2], from scores)"
    assert re.fullmatch(r"3 phases, \d+\.\d s, 2 LLM calls, \d+ prompt \+ \d+ completion tokens", messages[2])


def test_anot_dbg_020_level_2_shows_phases_strategy_and_lwt_steps():
    verbose = run_with_log(2)
    text = "\n".join(verbose)
    assert "[P2:R07] ReAct expansion: 3 initial steps..." in text
    assert "[P2:R07] ReAct done after 1 iterations" in text
    assert "[P3:R07] Executing 3 steps in 2 layers..." in text
    assert "===STRATEGY===" in text and "(final)=LLM(" in text
    assert "[P3:R07] layer 0: (c2) -> [1, 3]" in text
    assert "[P3:R07] the final step is not needed: the condition steps rank the items" in text
    assert "(final) ->" not in text
    seed_way = "\n".join(run_with_log(2, rank_by="final"))
    assert "[P3:R07] the final step decides the ranking: running it" in seed_way
    assert "[P3:R07] layer 1: (final) -> [3, 1, 2]" in seed_way
    assert "prompt system:" not in text


def test_anot_dbg_030_level_3_shows_full_prompts_and_responses():
    text = "\n".join(run_with_log(3, rank_by="final"))
    assert "[P1:R07] prompt system: Turn a request into conditions" in text
    assert "[P1:R07] response: {" in text
    assert "[P2:R07] response: done({})" in text
    assert "[P3:R07] (final) filled: c1=[1, 3], c2=[1, 3]. ck lists the items" in text
    assert "(c1) filled" not in text  # a CHECK step sends no prompt


def test_anot_dbg_040_the_level_comes_from_anot_debug_unless_given(monkeypatch):
    monkeypatch.setenv("ANOT_DEBUG", "2")
    assert level_from_env() == 2 and DebugLog.resolve(None).level == 2 and DebugLog.resolve(0).level == 0
    monkeypatch.setenv("ANOT_DEBUG", "loud")
    with pytest.raises(ValueError, match=r"\$ANOT_DEBUG='loud'"):
        level_from_env()
    from datetime import datetime

    assert format_line("P1", "R00", "hi", datetime(2024, 1, 1, 9, 5, 7, 123456)) == "[09:05:07.123] [P1:R00] hi"


def test_anot_mmd_010_the_lwt_dag_renders_as_mermaid():
    steps = parse_lwt("(c1)=LLM('a [x]')\n(c2)=LLM('b \"q\"')\n(final)=LLM('{(c1)} {(c2)}')")
    diagram = lwt_mermaid(steps)
    assert diagram.splitlines()[0] == "flowchart TD"
    assert '    s0["(c1) a #91;x#93;"]' in diagram and "#quot;q#quot;" in diagram
    assert "    s0 --> s2" in diagram and "    s1 --> s2" in diagram and "class s2 final" in diagram
    result = ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=0)("q", ITEMS)
    assert result.lwt_mermaid()._repr_markdown_().startswith("```mermaid\nflowchart TD")
