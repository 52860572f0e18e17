"""The docs site (``mkdocs.yml``, pages under ``docs/`` outside ``docs/design``) builds, and its code runs.

- **The build**: ``mkdocs build --strict`` into a temporary folder; a broken link (to a page, a heading or a design
  doc), a page missing from the nav or an API reference (``::: module``) that does not resolve fails it.
- **Python blocks**: the blocks of each page run in order in one namespace (one :class:`Notebook` per page), on the
  tour world of ``conftest.py``: the scripted tour model as the default model, a fresh SQLite database for durable
  runs, the fixture modules (``myapp``) importable and ``server.py`` in the working directory. One test per block,
  named after its page and line; :data:`PRINTS` says what some pages must print, so the values their comments
  promise (``# 437``) are the values the code computed.
- **Command lines**: each ``llamabot`` line of a bash block names a command that exists, and every ``--option`` it
  uses is in that command's ``--help`` (so no page documents a command or option the CLI does not have).
- **Getting started** shows the README's two commands, character for character.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.notebook import Notebook, blocks_of

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in ("design", "hooks"))
BLOCKS = [block for page in PAGES for block in blocks_of(page, "python")]


def page_of(path: Path) -> str:
    return path.relative_to(DOCS).as_posix()


def where(block) -> str:
    return f"docs/{page_of(block.path)}:{block.line}"


#: What a page's blocks print, in total: page -> texts that must appear in it.
PRINTS: dict[str, list[str]] = {
    "index.md": ["437"],
    "getting-started.md": ["437", "'required'"],
    "tour/agent.md": ["437", "multiply {'a': 23, 'b': 19} 437", "35"],
    "tour/service.md": ["['3', '6', '9', '12', '15']", "final_answer", "{'answer': '437', 'steps': ['multiply', 'respond_to_user']}"],
    "tour/custom-graph.md": ["42", "flowchart"],
    "tour/api-features.md": ["a=23.0 b=19.0 product=437.0", "tea: 3.5", "42"],
    "tour/aot.md": ["17", "66", "sqrt"],
    "tour/anot.md": ["(1, 2)", "[['c1', 'c2'], ['final']]"],
    "tour/tot.md": ["completed", "= 24", "True"],
    "tour/durable.md": ["[('pay', {'amount': 5.0, 'to': 'alice'})]", "sent 5.0 to alice", "437", "5"],
    "tour/mcp.md": ["['echo']", "437", "True"],
    "tour/console.md": ["437", "200 True"],
    "tour/evals.md": ["2/2 right"],
    "tour/otel.md": ["invoke_agent", "execute_tool", "chat", "gen_ai.usage.input_tokens"],
}


@pytest.fixture(scope="module")
def pages(tour_world):
    """One notebook per page (made on its first block), and what each page's blocks printed."""
    made: dict[Path, Notebook] = {}
    printed: dict[Path, io.StringIO] = {}
    yield made, printed
    for notebook in made.values():
        notebook.close()


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[where(b) for b in BLOCKS])
def test_site_python_block_runs(pages, index):
    made, printed = pages
    block = BLOCKS[index]
    todo = [block]
    if block.path not in made:  # run alone (-k): the page's earlier blocks first
        made[block.path], printed[block.path] = Notebook(), io.StringIO()
        todo = [b for b in BLOCKS[:index] if b.path == block.path] + todo
    for each in todo:
        with contextlib.redirect_stdout(printed[block.path]):
            made[block.path].run(each)
    if block is [b for b in BLOCKS if b.path == block.path][-1]:
        output = printed[block.path].getvalue()
        for text in PRINTS.get(page_of(block.path), []):
            assert text in output, f"docs/{page_of(block.path)} should print {text!r}; it printed:\n{output}"


def test_site_prints_name_pages_with_python_blocks():
    assert set(PRINTS) <= {page_of(b.path) for b in BLOCKS}


# -- command lines ----------------------------------------------------------------------------------------------

def command_lines() -> list[tuple[str, str]]:
    """Each ``llamabot`` line of the pages' bash blocks (without a trailing ``  # comment``), with where it is."""
    lines = []
    for page in PAGES:
        for block in blocks_of(page, "bash"):
            for offset, line in enumerate(block.code.splitlines()):
                command = re.split(r"\s{2,}#", line)[0].strip()
                if command.startswith("llamabot"):
                    lines.append((command, f"docs/{page_of(page)}:{block.line + offset}"))
    return lines


COMMAND_LINES = command_lines()


def help_of(argv: list[str]) -> tuple[list[str], str]:
    """The longest prefix of ``argv`` that names a command (its words before the first option or argument that is
    not a subcommand), and that command's ``--help`` text."""
    from typer.testing import CliRunner

    from llamabot.cli import app

    words = [w for w in argv[1:] if not w.startswith("-")]
    for n in range(len(words), -1, -1):
        result = CliRunner().invoke(app, [*words[:n], "--help"], terminal_width=200)
        if result.exit_code == 0:
            return words[:n], result.output
    raise AssertionError(f"`llamabot --help` fails: {result.output}")


@pytest.mark.parametrize("command", [c for c, _ in COMMAND_LINES], ids=[w for _, w in COMMAND_LINES])
def test_site_command_line_names_real_command_and_options(command):
    argv = shlex.split(command)
    path, text = help_of(argv)
    first = next((w for w in argv[1:] if not w.startswith("-")), None)
    assert path or first is None, f"{command!r}: `llamabot {first}` is not a command"
    options = [w.split("=")[0] for w in argv[1:] if w.startswith("--")]
    missing = [o for o in options if o not in text]
    assert not missing, f"{command!r}: {missing} not in `llamabot {' '.join(path)} --help`"


def test_getting_started_shows_the_readme_commands():
    readme = [b.code for b in blocks_of(ROOT / "README.md", "bash")][:2]
    page = [b.code for b in blocks_of(DOCS / "getting-started.md", "bash")][:2]
    assert page == readme


# -- the build ------------------------------------------------------------------------------------------------

def test_site_builds_strict(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "llamabot" / "index.html").is_file()
    assert (tmp_path / "site" / "design" / "high-level-design.md").is_file()   # the design docs, as they are
