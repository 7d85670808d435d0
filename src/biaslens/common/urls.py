"""What is shown and recorded of a server's address."""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit


def redact_url(url: str) -> str:
    """``url`` without secrets: no user name or password (``http://user:pass@host/v1`` ->
    ``http://***@host/v1``) and no query values (``?api_key=S`` -> ``?api_key=***``), since a
    key can travel in either. What is recorded and shown of a server's address."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if "@" in parts.netloc:
        parts = parts._replace(netloc=f"***@{parts.netloc.rsplit('@', 1)[1]}")
    if parts.query:
        names = [item.split("=", 1)[0] for item in parts.query.split("&") if item]
        parts = parts._replace(query="&".join(f"{name}=***" for name in names))
    if parts.fragment:
        parts = parts._replace(fragment="***")
    return urlunsplit(parts)


def split_query(url: str) -> tuple[str, list[tuple[str, str]]]:
    """``url`` without its query string, and the query's parameters: a path is appended to the
    first (``…/v1`` + ``/models``) and the parameters are sent with every request."""
    parts = urlsplit(url)
    base = urlunsplit(parts._replace(query="", fragment=""))
    return base.rstrip("/"), parse_qsl(parts.query, keep_blank_values=True)


def url_credentials(url: str) -> tuple[str | None, str | None]:
    """The user name and password of ``url`` (``http://user:pass@host``), percent-decoded as
    an HTTP client sends them; (None, None) where it has none."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None, None
    user, password = parts.username, parts.password
    return (unquote(user) if user else None), (unquote(password) if password else None)
