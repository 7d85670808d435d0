"""Text from outside (model names and paths, config fields, server messages, continuations,
file contents) made inert for the place it is shown: a terminal, a Markdown file, a page.

A model folder may be named ``x<script>…</script> |**B** \\x1b[31mRED``: on a terminal its
escape sequence would recolour (or retitle, or rewrite) the user's screen; in a Markdown file
its ``<script>`` and ``|`` would run or break the table in any viewer that renders it (the
Hub's among them). Each place gets its own rule, applied where the text is placed, never to the
data itself.
"""

from __future__ import annotations

import html
import re
import unicodedata

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Characters that reorder the text after them: shown escaped like control characters."""


def escaped_controls(text: str, keep: str = "") -> str:
    """``text`` with control characters and bidi overrides shown as escapes (``\\x1b``), but
    those in ``keep`` (e.g. ``"\\n"`` for text that is printed over several lines)."""
    return "".join(
        c.encode("unicode_escape").decode("ascii")
        if (unicodedata.category(c) == "Cc" or c in BIDI_CONTROLS) and c not in keep
        else c
        for c in str(text)
    )


MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
"""Markdown's inline metacharacters, and ``|`` (a table's cell border)."""


def markdown_text(text: object) -> str:
    """``text`` as literal Markdown on one line: control characters escaped, line breaks as
    spaces, ``<``, ``>`` and ``&`` as HTML entities (no tag, no script), emphasis, code,
    links and table borders backslash-escaped, and a leading ``#``, ``-``, ``+`` or list
    number followed by a space kept from starting a block (``-0.5`` and ``0.38`` stay as
    they are)."""
    one_line = re.sub(r"[\r\n]+", " ", str(text))
    shown = html.escape(escaped_controls(one_line), quote=False)
    shown = MARKDOWN_SPECIAL.sub(r"\\\1", shown)
    shown = re.sub(r"^(\s*)([#+\-])(?=\s|$)", r"\1\\\2", shown)  # a heading or list mark
    return re.sub(r"^(\s*\d+)([.)])(?=\s|$)", r"\1\\\2", shown)
