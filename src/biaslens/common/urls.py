"""What is shown and recorded of a server's address."""

from __future__ import annotations


def redact_url(url: str) -> str:
    """``url`` without a user name or password (``http://user:pass@host/v1`` ->
    ``http://***@host/v1``): what is recorded and shown of a server's address."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))
