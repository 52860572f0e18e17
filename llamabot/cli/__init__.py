"""The ``llamabot`` command line. Imports only typer and rich at start; models load on first use."""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console

app = typer.Typer(
    name="llamabot",
    help="LLM agents as PocketFlow graphs, with an embedded local model that works offline.",
    no_args_is_help=True,
    add_completion=False,
)
#: ``llamabot eval <pattern>``: each reasoning pattern registers its evaluation harness here.
eval_app = typer.Typer(help="Evaluate a reasoning pattern on a dataset against baselines on the same model.")
app.add_typer(eval_app, name="eval")

console = Console()
err_console = Console(stderr=True)


def _print_version(show: bool) -> None:
    if show:
        from llamabot import __version__

        typer.echo(f"llamabot {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
    otel: Optional[str] = typer.Option(  # noqa: UP045
        None, "--otel", metavar="URL", help="Send every run's trace to this OpenTelemetry collector over OTLP/HTTP "
        "(e.g. http://localhost:4318). Needs the otel extra: pip install 'llamabot\\[otel]'."
    ),
) -> None:
    """LLM agents as PocketFlow graphs, with an embedded local model that works offline."""
    if otel:
        ctx.call_on_close(_export_traces(otel))


def _export_traces(endpoint: str):  # noqa: ANN202 (a callable that flushes)
    """Export the command's runs to ``endpoint``; returns what flushes and stops the export (at the command's end)."""
    try:
        from llamabot.observe import otel

        otel.export_to(endpoint)
    except (ImportError, ValueError) as exc:  # the otel extra missing; not an http(s) URL
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    return otel.uninstrument


MODEL_OPTION = typer.Option(
    None, "--model", "-m", help="LiteLLM model string (default: $LLAMABOT_MODEL, else the embedded local model)."
)


@app.command()
def chat(
    message: str = typer.Argument(..., help="What to ask."),
    model: Optional[str] = MODEL_OPTION,  # noqa: UP045 (typer needs Optional on 3.10)
    system_prompt: str = typer.Option("You are a helpful, concise assistant.", "--system", help="System prompt."),
    max_tokens: int = typer.Option(512, help="Upper bound on the reply length in tokens."),
    stream: bool = typer.Option(True, help="Print the reply as it is generated."),
) -> None:
    """Ask one question and print the answer (one-shot)."""
    from llamabot.bot.simplebot import SimpleBot
    from llamabot.errors import LlamabotError

    def show(piece: str) -> None:
        console.print(piece, end="", markup=False, highlight=False)

    try:
        bot = SimpleBot(system_prompt, model=model, stream_target=show if stream else None,
                        model_settings={"max_tokens": max_tokens})
        reply = bot(message)
    except LlamabotError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    if stream:
        console.print()
    else:
        console.print(reply.content, markup=False, highlight=False)


def load_cli_tools(specs: list[str]) -> list:
    """``module:attribute`` specs -> tools (:func:`llamabot.tools.loading.load_tools`), as a CLI usage error."""
    from llamabot.errors import ToolDefinitionError
    from llamabot.tools.loading import load_tools

    try:
        return load_tools(specs)
    except ToolDefinitionError as exc:
        raise typer.BadParameter(str(exc)) from exc


def trace_tree(trace):  # noqa: ANN001, ANN201 - rich types stay out of the import path
    """A rich Tree of a trace: run -> decision -> model call / tool call, with timings and results."""
    from rich.tree import Tree

    def label(span) -> str:  # noqa: ANN001
        ms = f"{span.duration_s * 1000:.1f} ms" if span.duration_s is not None else "open"
        text = f"[bold]{span.kind}[/bold] {span.name} [dim]{ms}[/dim]"
        if span.kind == "model_call" and "reply" in span.attributes:
            reply = span.attributes["reply"]
            calls = ", ".join(c.name for c in reply.tool_calls) or repr((reply.content or "")[:60])
            text += f" tokens {reply.usage.prompt_tokens}+{reply.usage.completion_tokens} -> {calls}"
        if span.kind == "tool_call":
            text += f" args {span.attributes.get('arguments')}"
            if "result" in span.attributes:
                text += f" = {span.attributes['result']!r}"
        if span.error:
            text += f" [red]error: {span.error}[/red]"
        return text

    children: dict = {}
    for span in trace.spans:
        children.setdefault(span.parent_id, []).append(span)
    root = Tree(f"trace {trace.trace_id}")

    def add(node, parent_id) -> None:  # noqa: ANN001
        for span in children.get(parent_id, []):
            add(node.add(label(span)), span.span_id)

    add(root, None)
    return root


def step_printer():  # noqa: ANN201 - rich and the hook base load with the command
    """A lifecycle hook that prints each decision and tool call of the outermost run to stderr as it happens
    (the embedded model can take many seconds per decision: show that it is working), and the answer to stdout
    as the model writes it (``streamed`` holds what it printed)."""
    from llamabot.agents.decision import RESPOND
    from llamabot.observe.answer_stream import AnswerStreams
    from llamabot.observe.hooks import RunHooks

    class StepPrinter(RunHooks):
        def __init__(self) -> None:
            self.depth = 0
            self.answers = AnswerStreams({RESPOND: "response"})
            self.streamed: list[str] = []

        def on_tool_call_delta(self, span, delta) -> None:  # noqa: ANN001
            if self.depth == 1:
                self._show(self.answers.feed(span.span_id, delta))

        def on_model_call_end(self, span, state) -> None:  # noqa: ANN001
            if self.depth == 1:
                for piece in self.answers.finish(span.span_id):
                    self._show(piece)

        def _show(self, text: object) -> None:
            if text and isinstance(text, str):  # the agent's text answer (the CLI's agents have no output type)
                self.streamed.append(text)
                console.print(text, end="", markup=False, highlight=False, soft_wrap=True)

        def on_run_start(self, span, state) -> None:  # noqa: ANN001
            self.depth += 1

        def on_run_end(self, span, state) -> None:  # noqa: ANN001
            self.depth -= 1

        def on_node_start(self, span, state) -> None:  # noqa: ANN001
            if self.depth == 1 and span.kind == "decision":
                err_console.print("[dim]thinking...[/dim]", highlight=False)

        def on_tool_call_end(self, span, state) -> None:  # noqa: ANN001
            if self.depth != 1:
                return
            arguments = ", ".join(f"{k}={v!r}" for k, v in (span.attributes.get("arguments") or {}).items())
            outcome = f"[red]{span.error}[/red]" if span.error else repr(span.attributes.get("result"))
            err_console.print(f"  {span.name}({arguments}) -> {outcome}  [dim]{span.duration_s or 0:.2f} s[/dim]",
                              highlight=False)

    return StepPrinter()


@app.command()
def agent(
    question: str = typer.Argument(..., help="What to ask the agent."),
    model: Optional[str] = MODEL_OPTION,  # noqa: UP045
    tool_specs: list[str] = typer.Option(
        [], "--tool", "-t", help="A tool as module:function (repeatable). Default: the calculator toolkit."
    ),
    mcp_servers: list[str] = typer.Option(
        [], "--mcp", help='The tools of an MCP server: a command run over stdio ("python server.py") or an '
        "http(s):// URL (repeatable; stopped when the command ends)."
    ),
    mcp_approval: bool = typer.Option(
        False, "--mcp-approval", help="Every --mcp tool waits for your decision before each call (asked on the "
        "terminal; without one, the run stops before the call)."
    ),
    max_iterations: int = typer.Option(8, help="Model decisions before the agent must answer."),
    show_trace: bool = typer.Option(False, "--trace", help="Show the run's trace as a tree."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not show the steps as they happen (stderr)."),
) -> None:
    """Answer a question with the reference agent graph (tools + the embedded model by default); each decision
    and tool call is shown on stderr as it happens, and the answer on stdout as the model writes it."""
    import json
    from contextlib import ExitStack

    from llamabot.agents.agentbot import AgentBot
    from llamabot.agents.approval import ApprovalRequired
    from llamabot.cli.approve import PAUSED_EXIT, interactive, terminal_approver
    from llamabot.errors import LlamabotError

    tools = load_cli_tools(tool_specs or ([] if mcp_servers else ["llamabot.toolkits.calculator:CALCULATOR_TOOLS"]))
    servers = ExitStack()
    try:
        if mcp_servers:
            from llamabot.tools.mcp import mcp_tools

            tools += [t for server in mcp_servers for t in servers.enter_context(mcp_tools(server, requires_approval=mcp_approval))]
        printer = None if quiet else step_printer()
        approver = terminal_approver(console) if interactive() else None
        bot = AgentBot(tools=tools, model=model, max_iterations=max_iterations,
                       hooks=() if printer is None else (printer,), approver=approver)
        answer = bot(question)
    except ApprovalRequired as exc:
        calls = ", ".join(f"{r.tool}({json.dumps(r.arguments)})" for r in exc.requests)
        err_console.print(f"[red]error:[/red] the run needs approval for {calls}, and no terminal is attached to "
                          "ask; the tool did not run. Run the command in a terminal, or use a durable run "
                          "(llamabot runs approve).", highlight=False)
        raise typer.Exit(PAUSED_EXIT) from exc
    except (LlamabotError, ValueError, RuntimeError) as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        if show_trace and "bot" in locals() and bot.last_trace is not None:
            console.print(trace_tree(bot.last_trace))
        raise typer.Exit(1) from exc
    finally:
        servers.close()
    streamed = "".join(printer.streamed) if printer is not None else ""
    if streamed:
        console.print()  # end the answer printed as it was written
    if show_trace:
        console.print(trace_tree(bot.last_trace))
        console.print(f"[dim]usage: {bot.last_trace.usage.describe()}[/dim]", highlight=False)
    if streamed != str(answer) or show_trace:
        console.print(str(answer), markup=False, highlight=False)


def _register_patterns() -> None:
    """Each reasoning pattern adds its commands from its own ``cli`` module (typer and rich only at import)."""
    import importlib

    for module in ("llamabot.cli.models", "llamabot.cli.aot", "llamabot.cli.tot", "llamabot.cli.anot", "llamabot.cli.runs",
                   "llamabot.cli.web_console", "llamabot.cli.eval_run"):
        importlib.import_module(module).register(app, eval_app)


_register_patterns()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
