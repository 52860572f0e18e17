"""Approvals on the terminal: ``llamabot agent`` asks a person before a tool that requires approval runs.

Attached to a terminal, each such call is shown with its arguments and answered y (approve), n (reject, with a
reason) or e (approve with edited JSON arguments). Not attached to one, nobody can answer: the command gives no
approver, so the run pauses before the call and the command exits with :data:`PAUSED_EXIT` and a message naming
the calls; the tool never runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from llamabot.tools.approval import ApprovalRequest, Decision

#: The exit status of a command whose run paused for an approval nobody could give.
PAUSED_EXIT = 3


def terminal_approver(console: Any, ask: Callable[[str], str] = input) -> Callable[[ApprovalRequest], Decision]:
    """An approver that asks on the terminal (``ask`` reads one answer line)."""

    def approve(request: ApprovalRequest) -> Decision:
        console.print(f"[bold yellow]approval needed:[/bold yellow] {request.tool}"
                      f"({json.dumps(request.arguments)})", highlight=False)
        while True:
            answer = ask("approve? [y]es / [n]o / [e]dit arguments: ").strip().lower()
            if answer in ("y", "yes"):
                return Decision.approve()
            if answer in ("n", "no"):
                return Decision.reject(ask("reason (shown to the model): ").strip())
            if answer in ("e", "edit"):
                text = ask("arguments as JSON: ")
                try:
                    arguments = json.loads(text)
                except ValueError as exc:
                    console.print(f"[red]not JSON:[/red] {exc}")
                    continue
                if not isinstance(arguments, dict):
                    console.print("[red]the arguments must be a JSON object[/red]")
                    continue
                return Decision.approve(arguments)

    return approve


def interactive() -> bool:
    """Whether a person can answer on this terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()
