"""Blocks that model text wraps in fences: Markdown code fences and tag pairs. Pure, linear time.

The one place that reads fenced blocks out of model output (tool calls written as text, structured output,
Tree-of-Thoughts replies). Scanning uses ``str.find`` only, so a reply of any shape costs time proportional
to its length (the regexes these replace backtracked: an unclosed fence of 2,000 blanks took seconds).
"""

from __future__ import annotations

FENCE = "```"
#: The language tags a JSON block may carry after its opening fence (compared case-insensitively).
JSON_TAG = "json"


def fenced_blocks(text: str | None) -> list[str]:
    """The bodies of the closed Markdown code fences in ``text``, in order, stripped of surrounding whitespace.

    An opening fence may carry a ``json`` tag (any case), which is not part of the body; any other tag is kept
    in the body, so it will not parse as JSON. An unclosed fence is not a block.
    """
    return _blocks(text, FENCE, FENCE, unclosed_runs_to_end=False, tag=JSON_TAG)


def tagged_blocks(text: str | None, tag: str) -> list[str]:
    """The bodies of ``<tag>...</tag>`` pairs in ``text``, in order, stripped; a last unclosed tag runs to the
    end of the text (small models often stop before closing it)."""
    return _blocks(text, f"<{tag}>", f"</{tag}>", unclosed_runs_to_end=True)


def _blocks(text: str | None, opening: str, closing: str, *, unclosed_runs_to_end: bool, tag: str = "") -> list[str]:
    """Every body between ``opening`` and the next ``closing``, left to right (each character looked at a
    bounded number of times); ``tag`` right after an opening (any case) is skipped."""
    blocks: list[str] = []
    position = 0
    while text:
        start = text.find(opening, position)
        if start < 0:
            break
        body = start + len(opening)
        if tag and text[body : body + len(tag)].lower() == tag:
            body += len(tag)
        end = text.find(closing, body)
        if end < 0:
            if unclosed_runs_to_end:
                blocks.append(text[body:].strip())
            break
        blocks.append(text[body:end].strip())
        position = end + len(closing)
    return blocks
