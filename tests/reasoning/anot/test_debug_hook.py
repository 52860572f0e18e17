"""ANoT's debug lines come from the lifecycle hooks and are loguru records of the ``llamabot`` logger in the
seed's layout (ANOT-DBG-050..080)."""

from __future__ import annotations

import asyncio
import re

from loguru import logger

from llamabot import ScriptedModel
from llamabot.models.scripted import tool_call
from llamabot.reasoning.anot import ANoTBot, AsyncANoTBot
from llamabot.reasoning.anot.debug import LOGGER_NAME, DebugHook, anot_sink_options

from .helpers import ITEMS, scripted_phase2, three_phase_responder

LINE = re.compile(r"^\[\d\d:\d\d:\d\d\.\d{3}\] \[(P1|P2|P3|RUN):R\d\d\] ")


def test_anot_dbg_050_the_lines_are_derived_from_a_lifecycle_hook_and_the_nodes_log_nothing():
    bot = ANoTBot(model=ScriptedModel(), debug=0)
    assert isinstance(bot.hooks[0], DebugHook) and bot.hooks[0].log is bot.log
    import inspect

    from llamabot.reasoning.anot import nodes

    assert "log" not in {n.lower() for n in vars(nodes)} and "DebugLog" not in inspect.getsource(nodes)


def test_anot_dbg_060_an_explicit_level_shows_lines_while_the_library_log_stays_disabled():
    seen_by_user: list[str] = []
    user_sink = logger.add(seen_by_user.append, level="TRACE")  # a sink of the program, not of the bot
    try:
        lines: list[str] = []
        ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=1, debug_sink=lines.append)("q", ITEMS)
        assert len(lines) == 3 and all(LINE.match(line) for line in lines), lines
        # the run's records went to the bot's sink only... and the library's own log stayed off
        assert not any("run ANoTBot started" in m for m in seen_by_user)
        seen_by_user.clear()
        ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=0)("q", ITEMS)
        assert seen_by_user == []  # after the run, the module is disabled again: level 0 is silent
    finally:
        logger.remove(user_sink)


def test_anot_dbg_070_a_user_who_enables_the_library_gets_the_lines_through_a_loguru_sink():
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m).rstrip("\n")), **anot_sink_options(2))
    logger.enable("llamabot")
    try:
        ANoTBot(model=ScriptedModel(responder=scripted_phase2(tool_call("lwt_list"), tool_call("done"))), debug=0)(
            "q", ITEMS, request_tag="R05")
    finally:
        logger.disable("llamabot")
        logger.remove(sink)
    firsts = [line for line in lines if line.startswith("[")]
    assert firsts and all(LINE.match(line) for line in firsts), lines
    text = "\n".join(lines)
    assert "[P2:R05] lwt_list() -> 3 steps" in text and "[P2:R05] done() -> 3 steps in 2 layers" in text
    assert "[P3:R05] Final ranking:" in text and "prompt system:" not in text  # level 3 lines filtered out


async def test_anot_dbg_080_concurrent_runs_write_only_their_own_lines_to_their_own_sinks():
    sinks: dict[str, list[str]] = {"R01": [], "R02": []}
    bots = {tag: AsyncANoTBot(model=ScriptedModel(responder=three_phase_responder(), latency_s=0.002), debug=1,
                              debug_sink=sinks[tag].append) for tag in sinks}
    await asyncio.gather(*(bots[tag].arun("q", ITEMS, request_tag=tag) for tag in sinks for _ in range(2)))
    for tag, lines in sinks.items():
        assert len(lines) == 6 and all(f":{tag}]" in line for line in lines), lines
    assert LOGGER_NAME == "llamabot.reasoning.anot.debug"
