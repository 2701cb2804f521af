"""The one redaction every output of the CLI gets, and text made safe for a terminal.

``shown`` is for the terminal (stderr lines, ``eval show``, progress lines, the approval prompt): the
environment's credentials (``alisio.core.share.secrets.known_credentials``), key shapes, Basic credentials
and URL passwords redacted, and control sequences escaped. ``redacted`` is the same redaction for JSON on
stdout, where the encoder already escapes control characters. The report files apply the same
``alisio.core.share.secrets.redact`` with the command's credentials.
"""

from __future__ import annotations

import functools
import os

__all__ = ["redacted", "shown"]


@functools.cache
def _known() -> tuple[tuple[str, str], ...]:
    from alisio.core.share.secrets import known_credentials

    return known_credentials(os.environ)


def shown(text: str) -> str:
    """``text`` made safe for the terminal: the one redaction every output gets (the environment's
    credentials, key shapes, Basic credentials, URL passwords), control sequences escaped
    (``alisio.core.lab.outputs.formats.terminal_text``)."""
    from alisio.core.lab.outputs.formats import terminal_text

    return terminal_text(text, _known())


def redacted(text: str) -> str:
    """``text`` with the same redaction as ``shown``, control characters kept (JSON on stdout)."""
    from alisio.core.share.secrets import redact

    return redact(text, _known())
