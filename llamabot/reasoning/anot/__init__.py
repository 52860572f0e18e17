"""ANoT (Adaptive Network of Thought): strategy -> LWT through the agent graph -> parallel DAG execution.

``parse_lwt`` and ``execution_layers`` (the pure LWT core) are imported eagerly and cheaply; every other
public name is imported on first access, so ``import llamabot.reasoning.anot`` never imports LiteLLM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llamabot.lazy import lazy_attributes
from llamabot.reasoning.anot.checks import CheckError, parse_check
from llamabot.reasoning.anot.lwt import (
    LWTCycleError,
    LWTError,
    LWTReferenceError,
    LWTStep,
    LWTSyntaxError,
    StepKind,
    execution_layers,
    parse_lwt,
)

_LAZY: dict[str, str] = {
    "ANoTBot": "llamabot.reasoning.anot.bot",
    "AsyncANoTBot": "llamabot.reasoning.anot.bot",
    "ANoTResult": "llamabot.reasoning.anot.state",
    "ConditionType": "llamabot.reasoning.anot.vocabulary",
    "YELP_VOCABULARY": "llamabot.reasoning.anot.vocabulary",
    "Strategy": "llamabot.reasoning.anot.strategy",
    "render_strategy": "llamabot.reasoning.anot.strategy",
    "substitute": "llamabot.reasoning.anot.substitution",
    "SubstitutionContext": "llamabot.reasoning.anot.substitution",
    "SubstitutionError": "llamabot.reasoning.anot.substitution",
    "DataPathError": "llamabot.reasoning.anot.paths",
    "parse_ranking": "llamabot.reasoning.anot.ranking",
    "Ranking": "llamabot.reasoning.anot.ranking",
    "lwt_mermaid": "llamabot.reasoning.anot.mermaid",
}

__all__ = [
    "ANoTBot",
    "ANoTResult",
    "AsyncANoTBot",
    "CheckError",
    "ConditionType",
    "DataPathError",
    "LWTCycleError",
    "LWTError",
    "LWTReferenceError",
    "LWTStep",
    "LWTSyntaxError",
    "Ranking",
    "StepKind",
    "Strategy",
    "SubstitutionContext",
    "SubstitutionError",
    "YELP_VOCABULARY",
    "execution_layers",
    "lwt_mermaid",
    "parse_check",
    "parse_lwt",
    "parse_ranking",
    "render_strategy",
    "substitute",
]

if TYPE_CHECKING:
    from llamabot.reasoning.anot.bot import ANoTBot, AsyncANoTBot
    from llamabot.reasoning.anot.mermaid import lwt_mermaid
    from llamabot.reasoning.anot.paths import DataPathError
    from llamabot.reasoning.anot.ranking import Ranking, parse_ranking
    from llamabot.reasoning.anot.state import ANoTResult
    from llamabot.reasoning.anot.strategy import Strategy, render_strategy
    from llamabot.reasoning.anot.substitution import SubstitutionContext, SubstitutionError, substitute
    from llamabot.reasoning.anot.vocabulary import YELP_VOCABULARY, ConditionType


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
