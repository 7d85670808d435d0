"""How a sampled reply is read: as a person reads it, by one rule that every scorer of replies
shares (SIB's pronoun, UnQover's and LEI's subject, the chat readouts).

A reader takes ``**She** was``, ``"She"``, ``'he'``, ``(He)`` and ``- she`` as beginning with
the pronoun: markdown emphasis, quotes, brackets, list marks, leading punctuation and whitespace
are not words. :func:`reply_start` drops them (digits stay: ``1. he`` begins with a number,
not a pronoun). Replies that still give no answer are counted, and :func:`unread_note` says how
many and what they looked like when they are more than :data:`UNREAD_SHOWN` of all, since the
shares are then read from fewer replies than were drawn.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

LEADING = re.compile(r"[\W_]+")
"""What comes before a reply's first word: anything but letters and digits."""
UNREAD_SHOWN = 0.10
"""Above this share of replies giving no answer, the run says so, with examples."""
EXAMPLES = 3


def reply_start(reply: str) -> str:
    """``reply`` from its first letter or digit on (module docstring)."""
    text = str(reply)
    skipped = LEADING.match(text)
    return text[skipped.end() :] if skipped else text


def unread_note(
    replies: Iterable[Sequence[str]], read: Callable[[str], bool], what: str
) -> str | None:
    """A note when more than :data:`UNREAD_SHOWN` of the ``replies`` (one list per prompt) give
    no answer by ``read`` (``what``: the answer looked for), with the commonest of them."""
    unread: Counter[str] = Counter()
    total = 0
    for texts in replies:
        for reply, n in Counter(texts).items():
            total += n
            if not read(reply):
                unread[reply] += n
    return unread_text(sum(unread.values()), total, unread, what)


def unread_text(missing: int, total: int, examples: Counter, what: str) -> str | None:
    """The note of :func:`unread_note` from its counts (``examples``: unread replies and how
    often each came)."""
    if not total or missing / total <= UNREAD_SHOWN:
        return None
    shown = ", ".join(repr(str(text)[:40]) for text, _ in examples.most_common(EXAMPLES))
    return (
        f"{missing:,} of {total:,} sampled replies ({missing / total:.0%}) give no {what} as a "
        f"reader takes it and count for no answer; the commonest: {shown}"
    )
