"""Shared scripted scenarios for the agent tests."""

from __future__ import annotations

from llamabot import tool
from llamabot.models.reply import ModelRequest
from llamabot.models.scripted import tool_call


def tool_messages(request: ModelRequest) -> list[dict]:
    """Tool results of the current run: those after the last user message."""
    last_user = max(i for i, m in enumerate(request.messages) if m["role"] == "user")
    return [m for m in request.messages[last_user:] if m["role"] == "tool"]


def add_then_respond(request: ModelRequest):
    """Reads N from 'add N and 1', calls add(N, 1), then responds with the tool's result."""
    done = tool_messages(request)
    if not done:
        n = int(request.last_user_text.split()[1])
        return tool_call("add", a=n, b=1)
    return tool_call("respond_to_user", response=done[-1]["content"])


def make_pay():
    """A payment tool that requires approval and records every transfer, so a test sees exactly what ran:
    ``(sent, pay)``."""
    sent: list[tuple[float, str]] = []

    @tool(requires_approval=True)
    def pay(amount: float, to: str) -> str:
        """Send money.

        Args:
            amount: How much.
            to: To whom.
        """
        sent.append((amount, to))
        return f"sent {amount} to {to}"

    return sent, pay
