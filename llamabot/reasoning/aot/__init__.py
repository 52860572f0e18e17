"""Atom of Thought: plan as validated JSON, then deterministic, parallel execution.

Importing this package is cheap (no LiteLLM); the model is reached only when a bot runs.
"""

from llamabot.reasoning.aot.execute import aexecute_plan, execute_plan, execution_layers
from llamabot.reasoning.aot.graph import AoTBot, AoTResult, AsyncAoTBot, replay_plan
from llamabot.reasoning.aot.plan import Atom, Plan
from llamabot.reasoning.aot.record import AtomExecutionError, AtomRecord, ExecutionRecord, RetryPolicy
from llamabot.reasoning.aot.validate import PlanIssue, PlanValidationError, validate_plan
from llamabot.reasoning.aot.visualization import plan_to_mermaid

__all__ = [
    "AoTBot", "AoTResult", "AsyncAoTBot", "Atom", "AtomExecutionError", "AtomRecord", "ExecutionRecord", "Plan",
    "PlanIssue", "PlanValidationError", "RetryPolicy", "aexecute_plan", "execute_plan", "execution_layers",
    "plan_to_mermaid", "replay_plan", "validate_plan",
]
