"""Every secret the process holds, and the one redaction that every message, reply and file
passes through.

A backend that reads a secret (an API key, the password of a server's URL, a query value such
as ``?api_key=``) hands it to :func:`hold` before it sends anything; :func:`redact` then
replaces it wherever it appears — in clear, percent-encoded, in base64, as the Bearer token
and as the Basic credentials (``user:password``) a server may echo back — with ``***``.
:class:`~biaslens.errors.BiaslensError` redacts its own message, the CLI's error and warning
lines redact theirs, and a served backend redacts each reply before it is read (so what a
server echoes reaches no cache, sample or card).
"""

from __future__ import annotations

import base64
import threading
from urllib.parse import quote

MASK = "***"
SHORTEST = 4
"""A shorter value is not treated as a secret: replacing it would garble ordinary text."""

_held: set[str] = set()
_lock = threading.Lock()


def forms(secret: str) -> set[str]:
    """The ways ``secret`` can appear in text: as given, percent-encoded, and in base64
    (standard and URL-safe, with and without padding)."""
    out = {secret, quote(secret, safe=""), quote(secret)}
    raw = secret.encode()
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = encoded.decode()
        out |= {text, text.rstrip("=")}
    return {form for form in out if len(form) >= SHORTEST}


def hold(*secrets: str | None) -> None:
    """Remember ``secrets`` (None and short values are ignored) for :func:`redact`."""
    with _lock:
        for secret in secrets:
            if secret and len(secret) >= SHORTEST:
                _held.update(forms(secret))


def hold_credentials(user: str | None, password: str | None) -> None:
    """A URL's ``user:password``: the password, and the pair as a Basic header carries it."""
    if password:
        hold(password, f"{user or ''}:{password}")


def _longest_first() -> list[str]:
    """The held forms, the longest first, so that a secret inside another's encoding is not
    left half shown."""
    with _lock:
        return sorted(_held, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every held secret, in every form, replaced by :data:`MASK`."""
    if not _held or not text:
        return text
    for secret in _longest_first():
        text = text.replace(secret, MASK)
    return text


def redact_bytes(data: bytes) -> bytes:
    """:func:`redact` for a reply's body (bytes that are not UTF-8 are compared as given)."""
    if not _held or not data:
        return data
    for secret in _longest_first():
        data = data.replace(secret.encode(), MASK.encode())
    return data
