"""Tree of Thoughts: a pure state machine and a thin graph that drives it.

Importing this package is cheap (no LiteLLM, no model): every name is imported on first use. The Game of 24
(its prompts, checker and evaluation) is a task of :mod:`llamabot.evals.game24`::

    from llamabot.evals.game24 import GAME24_TOT_OPTIONS, Game24Prompts, check_game24
    result = ToTBot(prompts=Game24Prompts(), **GAME24_TOT_OPTIONS)("4 9 10 13")  # the measured game options
    check_game24("4 9 10 13", result.answer)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llamabot.lazy import lazy_attributes

_EXPORTS: dict[str, str] = {
    "ToTBot": "llamabot.reasoning.tot.graph",
    "AsyncToTBot": "llamabot.reasoning.tot.graph",
    "ToTMachine": "llamabot.reasoning.tot.machine",
    "ToTOptions": "llamabot.reasoning.tot.options",
    "ToTError": "llamabot.reasoning.tot.options",
    "Env": "llamabot.reasoning.tot.machine",
    "Status": "llamabot.reasoning.tot.machine",
    "TerminationReason": "llamabot.reasoning.tot.machine",
    "new_machine": "llamabot.reasoning.tot.machine",
    "update": "llamabot.reasoning.tot.machine",
    "to_dict": "llamabot.reasoning.tot.persist",
    "from_dict": "llamabot.reasoning.tot.persist",
    "ToTResult": "llamabot.reasoning.tot.result",
    "build_result": "llamabot.reasoning.tot.result",
    "ToTPrompts": "llamabot.reasoning.tot.prompts",
    "tree_to_mermaid": "llamabot.reasoning.tot.mermaid",
    "parse_thoughts": "llamabot.reasoning.tot.parsing",
    "parse_scores": "llamabot.reasoning.tot.parsing",
}

__all__ = [
    "AsyncToTBot", "Env", "Status", "TerminationReason", "ToTBot", "ToTError",
    "ToTMachine", "ToTOptions", "ToTPrompts", "ToTResult", "build_result", "from_dict", "new_machine",
    "parse_scores", "parse_thoughts", "to_dict", "tree_to_mermaid", "update",
]

if TYPE_CHECKING:
    from llamabot.reasoning.tot.graph import AsyncToTBot, ToTBot
    from llamabot.reasoning.tot.machine import (
        Env,
        Status,
        TerminationReason,
        ToTMachine,
        new_machine,
        update,
    )
    from llamabot.reasoning.tot.mermaid import tree_to_mermaid
    from llamabot.reasoning.tot.options import ToTError, ToTOptions
    from llamabot.reasoning.tot.parsing import parse_scores, parse_thoughts
    from llamabot.reasoning.tot.persist import from_dict, to_dict
    from llamabot.reasoning.tot.prompts import ToTPrompts
    from llamabot.reasoning.tot.result import ToTResult, build_result


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), __all__)
