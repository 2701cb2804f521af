"""Provider endpoints as people may see them: a base URL without its credentials.

A base URL may carry a user name and a password (``http://user:pass@host/v1``). Those are credentials: they
are never written anywhere, not in a report's conditions, an error, an incident, runs.jsonl, stderr or an
export. ``endpoint_of`` is what a report records (scheme, host, port and path: two servers of the same model
can be told apart), and ``redact_credentials`` is applied to every text that may quote a URL.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

__all__ = ["REDACTED", "endpoint_of", "redact_credentials"]

REDACTED: Final = "<redacted>"
"""What stands in place of a URL's user information."""

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}

_USERINFO: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]+@")
"""``scheme://userinfo@``: the user information runs to the ``@`` and holds no space, slash, ``?`` or ``#``."""


def redact_credentials(text: str) -> str:
    """``text`` with the user information of every URL in it replaced: ``http://<redacted>@host/v1``."""
    return _USERINFO.sub(lambda match: f"{match.group(1)}{REDACTED}@", text)


def endpoint_of(base_url: str) -> str:
    """The endpoint a base URL names: ``scheme://host:port/path``, with no user, password, query or fragment.

    The port is always written (the scheme's default when the URL has none), so ``http://h/v1`` and
    ``http://h:80/v1`` are the same endpoint; a trailing slash of the path is dropped. A URL that cannot be
    split (no scheme or host, a bad port) is returned with its credentials redacted, never as given.
    """
    try:
        parts = urlsplit(base_url.strip())
        port = parts.port
    except ValueError:
        return redact_credentials(base_url)
    if not parts.scheme or not parts.hostname:
        return redact_credentials(base_url)
    scheme = parts.scheme.lower()
    host = parts.hostname
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
    where = host if port is None else f"{host}:{port}"
    return f"{scheme}://{where}{parts.path.rstrip('/')}"
