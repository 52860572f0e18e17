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
    blocks: list[str] = []
    if not text:
        return blocks
    position = 0
    while True:
        start = text.find(FENCE, position)
        if start < 0:
            return blocks
        body = start + len(FENCE)
        if text[body : body + len(JSON_TAG)].lower() == JSON_TAG:
            body += len(JSON_TAG)
        end = text.find(FENCE, body)
        if end < 0:
            return blocks
        blocks.append(text[body:end].strip())
        position = end + len(FENCE)


def tagged_blocks(text: str | None, tag: str) -> list[str]:
    """The bodies of ``<tag>...</tag>`` pairs in ``text``, in order, stripped; a last unclosed tag runs to the
    end of the text (small models often stop before closing it)."""
    blocks: list[str] = []
    if not text:
        return blocks
    opening, closing = f"<{tag}>", f"</{tag}>"
    position = 0
    while True:
        start = text.find(opening, position)
        if start < 0:
            return blocks
        body = start + len(opening)
        end = text.find(closing, body)
        if end < 0:
            blocks.append(text[body:].strip())
            return blocks
        blocks.append(text[body:end].strip())
        position = end + len(closing)
