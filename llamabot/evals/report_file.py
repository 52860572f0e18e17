"""Writing an evaluation's JSON report: whole or not at all.

The ``llamabot eval`` commands rewrite their report after every finished attempt (``"partial": true`` until the
last), so that an evaluation of hours that is interrupted keeps what it finished; each write goes to a temporary
file renamed over the report, so a process killed while writing never leaves half a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_report(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` as indented JSON to ``path`` through a temporary file beside it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(document, indent=2, default=str))
    tmp.replace(path)
