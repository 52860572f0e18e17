"""One source for the version number: ``llamabot.__version__`` (MDL-VER-010, MDL-VER-020)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap
from pathlib import Path

from typer.testing import CliRunner

import llamabot
from llamabot.cli import app

try:
    import tomllib
except ImportError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_mdl_ver_010_installed_metadata_version_is_llamabot_version():
    assert importlib.metadata.version("llamabot") == llamabot.__version__, (
        "the installed metadata and llamabot.__version__ disagree: reinstall (pip install -e .) after a version change"
    )


def test_mdl_ver_010_pyproject_reads_the_version_from_llamabot_and_nowhere_else():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "pyproject.toml must not repeat the version: it is dynamic"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "llamabot.__version__"}


def test_mdl_ver_010_setuptools_reads_the_version_without_importing_llamabot():
    """The build reads ``__version__`` from the source text (no import, so no dependency is needed to build)."""
    script = textwrap.dedent(
        f"""
        import sys
        from setuptools.config.expand import read_attr
        version = read_attr("llamabot.__version__", root_dir={str(ROOT)!r})
        assert "llamabot" not in sys.modules, "setuptools imported llamabot to read its version"
        print(version)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == llamabot.__version__


def test_mdl_ver_020_cli_prints_the_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"llamabot {llamabot.__version__}"


def test_mdl_ver_020_cli_version_imports_no_model_library():
    script = "import sys\nfrom llamabot.cli import main\nsys.argv = ['llamabot', '--version']\ntry:\n    main()\nexcept SystemExit:\n    pass\nprint(sorted(m for m in ('litellm', 'llama_cpp') if m in sys.modules))\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines() == [f"llamabot {llamabot.__version__}", "[]"]
