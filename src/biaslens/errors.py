"""One exception type for every user-facing error.

The CLI prints ``BiaslensError`` messages as one line and exits non-zero; anything else is a bug
and keeps its traceback.
"""

from biaslens.secrets import redact


class BiaslensError(Exception):
    """A problem with the user's input, model or environment, explained in one line. Its
    message never shows a secret the process holds (:mod:`biaslens.secrets`): a reply
    quoted in it may echo one."""

    def __str__(self) -> str:
        return redact(super().__str__())


class ConfigMismatchError(BiaslensError):
    """The output directory already holds a run with a different configuration; ``reason``
    says what differs, in a few words (``limit: 3 -> 4``)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


def quoted(text: str) -> str:
    """User text in quotes, shown verbatim (``repr`` would escape a name holding both quote
    characters, and the user could no longer find what they typed in the message)."""
    text = str(text)
    for left, right in (("'", "'"), ('"', '"'), ("`", "`")):
        if left not in text:
            return f"{left}{text}{right}"
    return f"«{text}»"
