"""Secret scanning over JSON-like data: the safety net of cassettes and of ``eval export``.

Two kinds of evidence, and the rules this module keeps:

- **Well-known key shapes** (OpenAI, Anthropic, Groq, xAI, OpenRouter, DeepSeek-style, Google, AWS, GitHub,
  Slack, Hugging Face, Stripe, PEM private key blocks, JWTs, ``Bearer`` credentials, ``Basic`` credentials
  (the base64 of ``user:password`` that a URL's user information becomes in an Authorization header: a
  provider that echoes the header shows it), and URLs that carry a password: ``scheme://user:pass@``). Every shape starts
  with a fixed prefix and needs a long enough body, so ordinary text, sha256 hex digests, UUIDs, base64 of
  short text and file paths do not match. Shapes whose body could be a word chain (``sk-...``) must also
  hold a digit, unless their prefix is one only a key has (OpenAI's ``sk-proj-``, ``sk-svcacct-``,
  ``sk-admin-``).
- **Exact credentials** of the profile: ``known_credentials`` picks them from an environment mapping the
  shell passes in; ``scan`` finds each value anywhere in a string, also inside a longer one.
- A hit names the field (``runs[1].verifiers[0].detail``) and the kind (``openai-key``,
  ``credential OPENAI_API_KEY``), **never the value**. A dict key that holds a secret shows as ``<key>`` in
  every path through it, so no path repeats the secret either.
- Where two matches overlap, the first rule wins: exact credentials first, then the most specific shape
  (``sk-ant-`` before ``sk-``), so one secret gives one hit.

The scan is pattern-based: a safety net, not a guarantee. Review what you share.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

import msgspec

from alisio.core.base import Frozen

__all__ = [
    "CREDENTIAL_NAME_MARKERS",
    "MIN_CREDENTIAL_LENGTH",
    "SecretHit",
    "describe",
    "is_credential_name",
    "known_credentials",
    "redact",
    "scan",
]


class SecretHit(Frozen, frozen=True, kw_only=True):
    """A field that looks like it holds a secret. Carries no part of the value."""

    path: str
    """Where: keys as ``.name``, list items as ``[i]``, e.g. ``runs[1].verifiers[0].detail``."""
    kind: str
    """What it looks like: a shape (``openai-key``, ``jwt``...) or ``credential <VARIABLE>``."""

    def __str__(self) -> str:
        return f"{self.path or '(value)'}: {describe(self.kind)}"


CREDENTIAL_NAME_MARKERS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
"""A variable whose name holds one of these (any case) may hold a credential."""

MIN_CREDENTIAL_LENGTH: Final = 8
"""Shorter values (``1``, ``true``, ``dummy``) would match ordinary text everywhere: never credentials."""

_NOT_SECRET_WORDS: Final = frozenset(
    {"AUTHOR", "AUTHORS", "AUTHORITY", "XAUTHORITY", "KEYBOARD", "KEYMAP", "KEYTIMEOUT", "TOKENIZERS"}
)
"""Name words that hold a marker but name no secret (``GIT_AUTHOR_NAME``, ``XKB_KEYMAP``...)."""

_CREDENTIAL_PREFIX: Final = "credential "

_LABELS: Final = {
    "openai-key": "an OpenAI key",
    "anthropic-key": "an Anthropic key",
    "groq-key": "a Groq key",
    "xai-key": "an xAI key",
    "openrouter-key": "an OpenRouter key",
    "deepseek-key": "a DeepSeek-style key",
    "google-api-key": "a Google API key",
    "aws-access-key": "an AWS access key id",
    "aws-secret-key": "an AWS secret access key",
    "github-token": "a GitHub token",
    "slack-token": "a Slack token",
    "huggingface-token": "a Hugging Face token",
    "stripe-key": "a Stripe live key",
    "private-key-block": "a PEM private key block",
    "jwt": "a JSON Web Token",
    "bearer-credential": "a Bearer credential",
    "basic-credential": "a Basic credential (user:password in base64)",
    "url-credentials": "a URL with a password in it",
}

_START: Final = r"(?<![A-Za-z0-9])"
"""A shape starts at a word boundary, so ``disk-...`` never reads as ``sk-...``."""
_END: Final = r"(?![A-Za-z0-9])"

_SHAPES: Final[tuple[tuple[str, re.Pattern[str], bool], ...]] = tuple(
    (kind, re.compile(pattern), needs_digit)
    for kind, pattern, needs_digit in (
        ("private-key-block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", False),
        ("anthropic-key", _START + r"sk-ant-[A-Za-z0-9_-]{20,}", True),
        ("openrouter-key", _START + r"sk-or-[A-Za-z0-9_-]{20,}", True),
        ("stripe-key", _START + r"[sr]k_live_[A-Za-z0-9]{16,}", False),
        ("deepseek-key", _START + r"sk-[0-9a-f]{32}" + r"(?![A-Za-z0-9_-])", False),
        ("openai-key", _START + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}", False),
        ("openai-key", _START + r"sk-[A-Za-z0-9_-]{20,}", True),
        ("groq-key", _START + r"gsk_[A-Za-z0-9]{20,}", False),
        ("xai-key", _START + r"xai-[A-Za-z0-9]{20,}", False),
        ("google-api-key", _START + r"AIza[0-9A-Za-z_-]{35}" + r"(?![A-Za-z0-9_-])", False),
        ("aws-access-key", _START + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + _END, False),
        (
            "aws-secret-key",
            r"(?i:aws_?secret_?(?:access_?)?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
            False,
        ),
        ("github-token", _START + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", False),
        ("slack-token", _START + r"xox[abprs]-[A-Za-z0-9-]{10,}", True),
        ("huggingface-token", _START + r"hf_[A-Za-z0-9]{30,}" + _END, False),
        ("jwt", _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}", False),
        ("bearer-credential", r"(?i:\bbearer)\s+[A-Za-z0-9._~+/-]{16,}=*", True),
        ("basic-credential", r"(?i:\bbasic)\s+[A-Za-z0-9+/]{4,}={0,2}(?![A-Za-z0-9+/=])", False),
        ("url-credentials", r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/?#@\"'<>:]+:[^\s/?#@\"'<>]+@", False),
    )
)
"""(kind, pattern, the match must hold a digit). Order matters: the first rule to claim a span wins."""

_DIGIT: Final = re.compile(r"[0-9]")
_PLAIN_KEY: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
_URL: Final = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_WORD_SPLIT: Final = re.compile(r"[^A-Za-z0-9]+")


def describe(kind: str) -> str:
    """The human phrase for a hit's kind: ``looks like an OpenAI key``, ``holds the value of MY_TOKEN``."""
    if kind.startswith(_CREDENTIAL_PREFIX):
        return f"holds the value of {kind.removeprefix(_CREDENTIAL_PREFIX)}"
    return f"looks like {_LABELS.get(kind, kind)}"


def is_credential_name(name: str) -> bool:
    """Whether a variable called ``name`` may hold a credential (the one rule for names, see ``known_credentials``).

    A word of the name (split at anything but letters and digits, any case) contains KEY, TOKEN, SECRET,
    PASSWORD, PASSWD, CREDENTIAL or AUTH, and is none of ``AUTHOR``, ``AUTHORS``, ``AUTHORITY``,
    ``XAUTHORITY``, ``KEYBOARD``, ``KEYMAP``, ``KEYTIMEOUT``, ``TOKENIZERS``. The scanner uses it to pick the
    credentials to look for; the tools' environment (``alisio.core.harness.toolenv``) drops such variables.
    """
    words = (w for w in _WORD_SPLIT.split(name.upper()) if w and w not in _NOT_SECRET_WORDS)
    return any(marker in word for word in words for marker in CREDENTIAL_NAME_MARKERS)


def _credential_value(value: str) -> bool:
    """Values that cannot be a secret: a path (``SSH_AUTH_SOCK``, ``GOOGLE_APPLICATION_CREDENTIALS``), a URL
    without user information (``AUTH_URL``), or a plain number (``MAX_TOKENS``)."""
    if len(value) < MIN_CREDENTIAL_LENGTH or value.isdigit():
        return False
    if value.startswith(("/", "~/", "./", "../")):
        return False
    return not (_URL.match(value) and "@" not in value)


def known_credentials(env: Mapping[str, str], extra_names: Iterable[str] = ()) -> tuple[tuple[str, str], ...]:
    """The (name, value) pairs of ``env`` that hold credentials, sorted by name.

    The rule: a variable whose NAME has a word containing KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or
    AUTH (any case; words split at anything but letters and digits; ``AUTHOR``, ``AUTHORITY``, ``KEYBOARD``,
    ``KEYMAP``, ``KEYTIMEOUT``, ``TOKENIZERS`` do not count), whose value has at least 8 characters and is not
    an obvious non-secret: an absolute, home or relative path, a URL without ``user@`` in it, or only digits.
    Each name in ``extra_names`` (the configured ``apiKeyEnv``) counts whatever its name and value look like,
    when set to at least 8 characters.

    Args:
        env: the environment (the shell passes ``os.environ``).
        extra_names: variables that are credentials by configuration.

    Returns:
        The pairs, each value once (the first name in order keeps it).
    """
    extras = frozenset(extra_names)
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name in sorted(env):
        value = env[name]
        if value in seen or len(value) < MIN_CREDENTIAL_LENGTH:
            continue
        if name in extras or (is_credential_name(name) and _credential_value(value)):
            pairs.append((name, value))
            seen.add(value)
    return tuple(pairs)


def _spans_in(text: str, known: tuple[tuple[str, str], ...]) -> Iterator[tuple[int, int, str]]:
    """Each (start, end, kind) found in ``text``, in rule order; a span claimed by one rule is not claimed
    again."""
    claimed: list[tuple[int, int]] = []

    def claim(start: int, end: int) -> bool:
        if any(start < e and s < end for s, e in claimed):
            return False
        claimed.append((start, end))
        return True

    for name, value in known:
        if not value:
            continue
        start = text.find(value)
        while start >= 0:
            if claim(start, start + len(value)):
                yield start, start + len(value), _CREDENTIAL_PREFIX + name
            start = text.find(value, start + 1)
    for kind, pattern, needs_digit in _SHAPES:
        for match in pattern.finditer(text):
            if needs_digit and not _DIGIT.search(match.group()):
                continue
            if kind == "basic-credential" and not _is_basic(match.group()):
                continue
            if claim(match.start(), match.end()):
                yield match.start(), match.end(), kind


def _is_basic(text: str) -> bool:
    """Whether ``Basic <token>`` holds an HTTP Basic credential: base64 of ``user:password`` (so the
    words "basic authentication" are not one)."""
    token = text.split()[-1]
    try:
        decoded = binascii.a2b_base64(token + "=" * (-len(token) % 4), strict_mode=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and all(32 <= byte < 127 or byte >= 128 for byte in decoded)


def _kinds_in(text: str, known: tuple[tuple[str, str], ...]) -> Iterator[str]:
    """The kinds found in ``text``, each once, in rule order."""
    seen: set[str] = set()
    for _, _, kind in _spans_in(text, known):
        if kind not in seen:
            seen.add(kind)
            yield kind


def redact(text: str, known: tuple[tuple[str, str], ...]) -> str:
    """``text`` with every secret ``scan`` would find replaced by ``<redacted: KIND>`` (never the value).

    Exact credentials are named by their variable (``<redacted: credential OPENAI_API_KEY>``), shapes by their
    kind (``<redacted: openai-key>``). What this cannot recognize stays: a safety net, not a guarantee.
    """
    spans = sorted(_spans_in(text, known))
    if not spans:
        return text
    pieces, position = [], 0
    for start, end, kind in spans:
        pieces += [text[position:start], f"<redacted: {kind}>"]
        position = end
    return "".join(pieces) + text[position:]


def _key_path(parent: str, key: str, secret: bool) -> str:
    if secret:
        name = "<key>"
    elif _PLAIN_KEY.fullmatch(key):
        name = key
    else:
        return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{parent}.{name}" if parent else name


def _walk(value: object, known: tuple[tuple[str, str], ...], path: str) -> Iterator[SecretHit]:
    if isinstance(value, str):
        yield from (SecretHit(path=path, kind=kind) for kind in _kinds_in(value, known))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            text = str(key)
            key_kinds = tuple(_kinds_in(text, known))
            child = _key_path(path, text, bool(key_kinds))
            yield from (SecretHit(path=child, kind=kind) for kind in key_kinds)
            yield from _walk(item, known, child)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _walk(item, known, f"{path}[{index}]")
    elif isinstance(value, msgspec.Struct):
        yield from _walk(msgspec.to_builtins(value), known, path)


def scan(value: object, known: tuple[tuple[str, str], ...], root: str = "") -> tuple[SecretHit, ...]:
    """Every field of ``value`` that looks like it holds a secret, in document order.

    Args:
        value: JSON-like data (dict, list/tuple, str, numbers, booleans, None); a msgspec Struct is read
            through ``msgspec.to_builtins`` (its wire names). Numbers and None never hit.
        known: exact credentials, ``(name, value)`` pairs, usually from ``known_credentials``; each value is
            found anywhere in a string, also embedded in a longer one.
        root: the path of ``value`` itself (``""`` at the top: paths then start with the first key).

    Returns:
        One hit per (field, kind), never holding any part of the value; empty when nothing was found.
    """
    return tuple(_walk(value, known, root))
