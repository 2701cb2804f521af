"""How a mistake in config.toml reads: msgspec's validation message turned into one line naming the dotted key
(``limits.maxTurns``, ``agents.a.tools[0]``), the value written when it is safe to show, and a "did you mean".
``alisio.core.harness.config`` converts its tables through ``validation_error``; this module knows no table.

Rules it keeps: a value is shown only when short and plain, never under a key whose name says secret
(``provider.*key*``, ``apiKeyEnv``, header values); a key outside the known ones gets the closest known key at
the same depth, or the key whose last part is the one written.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from alisio.core.errors import ConfigError
from alisio.core.shape import expected_got

__all__ = ["Choices", "suggestion", "validation_error"]

Choices = tuple[tuple[str, str, tuple[str, ...]], ...]
"""(regex of a dotted key, what a value there is, the names it may take): an enum's "one of" and closest name."""

_AT = re.compile(r"^(?P<message>.*?)(?: - at (?P<in_key>`key` in )?`(?P<path>\$[^`]*)`)?$", re.DOTALL)
_FIELD = re.compile(r"^Object (?P<what>contains unknown|missing required) field `(?P<field>.*)`$", re.DOTALL)
_ENUM = re.compile(r"^Invalid enum value (?P<value>.*)$", re.DOTALL)
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_PATTERN_HINTS: Final[Mapping[str, str]] = {
    "baseUrl": "expected an http:// or https:// URL",
    "apiKeyEnv": "expected the NAME of an environment variable such as OPENAI_API_KEY (upper-case letters, "
    "digits, '_'); the key itself never goes in this file",
}
_SECRET_WORDS: Final = ("key", "token", "secret", "password")
_HEADER_NAME: Final = (
    "a header name is one HTTP token (letters, digits and !#$%&'*+.^_`|~-, at most 128 characters)"
)


def suggestion(key: str, known: Iterable[str]) -> str:
    """A "did you mean" hint: a key whose last part is the one written (``temperature`` and
    ``provider.temperature`` name ``sampling.temperature``), else the closest key at the same depth
    (``limits.bad`` never suggests the table ``limits``)."""
    known = tuple(known)
    last = key.rpartition(".")[2].lower()
    same = [name for name in known if name != key and name.rpartition(".")[2].lower() == last]
    if same:
        return f" (did you mean {same[0]}?)"
    depth = key.count(".")
    candidates = [name for name in known if name != key and name.count(".") == depth]
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _lookup(data: object, path: str) -> tuple[bool, object]:
    """The value at a msgspec path (``$.a.b[0]``) inside builtins, if it can be found."""
    value = data
    for name, index in _SEGMENT.findall(path):
        if name and isinstance(value, Mapping) and name in value:
            value = value[name]
        elif index and isinstance(value, list | tuple) and int(index) < len(value):
            value = value[int(index)]
        else:
            return False, None
    return True, value


def _shown(value: object) -> str:
    if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 60):
        return repr(value)
    return f"a {type(value).__name__}"


def _dotted(*parts: str) -> str:
    """Join key parts: ``("agents.a", "tools[0]")`` -> ``agents.a.tools[0]``; empty parts are dropped."""
    joined = ""
    for part in filter(None, parts):
        joined = part if not joined else f"{joined}{part}" if part.startswith("[") else f"{joined}.{part}"
    return joined


def _explain(
    message: str, key: str, value: tuple[bool, object], known: Callable[[], Iterable[str]], choices: Choices
) -> tuple[str, str]:
    """The dotted key and a message for one msgspec validation message at ``key``."""
    field = _FIELD.match(message)
    if field and field["what"] == "contains unknown":
        unknown = _dotted(key, field["field"])
        if unknown.startswith("provider.") and any(word in unknown.lower() for word in _SECRET_WORDS):
            secret = "a key never goes in the configuration; put it in an environment variable and name that "
            return unknown, f"unknown key: {secret}variable with provider.apiKeyEnv"
        return unknown, f"unknown key{suggestion(unknown, known())}"
    if field:
        return _dotted(key, field["field"]), "missing (this key is required)"
    enum = _ENUM.match(message)
    choice = next(((label, names) for pattern, label, names in choices if re.search(pattern, key)), None)
    if enum and choice:
        close = difflib.get_close_matches(enum["value"].strip("'\""), choice[1], n=1, cutoff=0.5)
        near = f"; did you mean {close[0]!r}?" if close else ""
        return key, f"{enum['value']} is not {choice[0]} (one of {', '.join(choice[1])}){near}"
    if key.startswith("provider.headers["):  # msgspec's "[...]" names no header; never echo a value
        key = "provider.headers"
        if "matching regex" in message:
            return key, "a header value is one line (no line break or NUL) of at most 8192 characters"
    message = (expected_got(message) or message).replace(" or null,", ",")  # TOML has no null
    name = key.rpartition(".")[2]
    if name == "apiKeyEnv":  # a user may have pasted the key itself here: never echo the value
        return key, _PATTERN_HINTS[name] if "matching regex" in message else message
    hint = _PATTERN_HINTS.get(name)
    found, shown = value
    if hint and "matching regex" in message:
        message = hint
    return key, f"{message}, got {_shown(shown)}" if found and "got" not in message else message


def validation_error(
    text: str,
    data: object,
    prefix: str,
    source: str,
    known: Callable[[], Iterable[str]],
    choices: Choices,
) -> ConfigError:
    """msgspec's ``... - at `$.a.b``` message as a ConfigError naming the dotted key: an unknown key with a
    "did you mean" among ``known()``, a value outside one of ``choices`` (key pattern, what it is, the names)
    with the closest name, a pattern's hint instead of its regex, never a secret's value."""
    match = _AT.match(text)
    message, path = (match["message"], match["path"] or "$") if match else (text, "$")
    key = _dotted(prefix, path.removeprefix("$").removeprefix("."))
    if match and match["in_key"]:
        token = key == "provider.headers" and "matching regex" in message
        return ConfigError(
            source=source, key=key, message=_HEADER_NAME if token else "every key must be a string"
        )
    key, message = _explain(message, key, _lookup(data, path), known, choices)
    return ConfigError(source=source, key=key, message=message)
