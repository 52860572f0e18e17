"""The Game of 24 as a task for Tree of Thoughts: its checker, its steps, its prompts and the measured options.

    from llamabot.evals.game24 import GAME24_TOT_OPTIONS, Game24Prompts, check_game24
    from llamabot.reasoning.tot import ToTBot

    result = ToTBot(prompts=Game24Prompts(), **GAME24_TOT_OPTIONS)("4 9 10 13")
    check_game24("4 9 10 13", result.answer)   # exact rational check, never eval

``check_game24`` is imported at once (pure, cheap); the prompts on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llamabot.evals.game24.check import PuzzleError, check_game24, parse_puzzle
from llamabot.lazy import lazy_attributes

_EXPORTS: dict[str, str] = {
    "GAME24_TOT_OPTIONS": "llamabot.evals.game24.prompts",
    "Game24Prompts": "llamabot.evals.game24.prompts",
    "game24_prompts": "llamabot.evals.game24.prompts",
    "extract_answer": "llamabot.evals.game24.steps",
    "is_solution_path": "llamabot.evals.game24.steps",
}

__all__ = ["GAME24_TOT_OPTIONS", "Game24Prompts", "PuzzleError", "check_game24", "extract_answer", "game24_prompts",
           "is_solution_path", "parse_puzzle"]

if TYPE_CHECKING:
    from llamabot.evals.game24.prompts import GAME24_TOT_OPTIONS, Game24Prompts, game24_prompts
    from llamabot.evals.game24.steps import extract_answer, is_solution_path

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), __all__)
