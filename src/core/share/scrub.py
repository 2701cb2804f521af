"""The transforms ``eval export`` applies to a run's bundle before anyone shares it.

Rules this module keeps:

- **Absolute paths become placeholders.** The directories the shell names (the run directory, the data
  directory, the home directory, temporary directories) become ``<run-dir>``, ``<data-dir>``, ``<home>`` and
  ``<tmp>``, the longest (most specific) first, so a run directory inside the data directory inside the home
  directory reads ``<run-dir>``; what follows the directory is kept (``<home>/project/check.py``). Any other
  absolute path becomes ``<path>``.
- **What an absolute path is, in free text.** A ``/`` followed by a path character (letters, digits,
  ``_ . ~ + @ % -``), at the start of the text or after a character that cannot be part of a path or a URL
  (space, quote, bracket, ``=``, ``,``, ``;``, ``:`` ...). So ``/usr/bin/python3: not found`` becomes
  ``<path>: not found``, ``PATH=/a:/b`` becomes ``PATH=<path>:<path>``, a ``file://`` URL loses its path,
  while ``http://host/v1`` (the ``/`` follows a host name), ``3/5``, ``dir/file``, ``./x`` and ``$HOME/x``
  are untouched. A trailing full stop ends a sentence, not the path.
- **A provider id that is not a plain identifier** (``[A-Za-z0-9_.-]+``; a ``/`` or ``:`` can only come
  from an endpoint URL or host) is replaced by ``custom-endpoint`` everywhere it appears, Markdown included.
  The provider id is read from ``report.conditions.provider``, and replaced before paths are scrubbed.
- **Idempotent**: scrubbing a scrubbed bundle changes nothing; placeholders are never read as paths.

Pattern-based, not a guarantee: a bare ``/v1`` in prose is indistinguishable from an absolute path (it
becomes ``<path>``), and a secret-looking string that is not a path is left to ``alisio.core.share.secrets``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from alisio.core.base import Frozen

__all__ = [
    "CUSTOM_ENDPOINT",
    "ScrubFacts",
    "is_plain_provider_id",
    "scrub_bundle",
    "scrub_text",
]

CUSTOM_ENDPOINT: Final = "custom-endpoint"

_PLAIN_PROVIDER: Final = re.compile(r"[A-Za-z0-9_.-]+")

_PLACEHOLDERS: Final = ("<run-dir>", "<data-dir>", "<home>", "<tmp>", "<path>")
_PATH_CHAR: Final = r"[\w.~+@%-]"
_START: Final = r"(?:(?<=file://)|(?<![\w.~+@%/$-]))" + "".join(f"(?<!{re.escape(p)})" for p in _PLACEHOLDERS)
"""A path starts after a non-path character (or right after ``file://``), never right after a placeholder."""
_ANY_PATH: Final = re.compile(_START + rf"/{_PATH_CHAR}+(?:/{_PATH_CHAR}+)*/?")


class ScrubFacts(Frozen, frozen=True, kw_only=True):
    """The directories of this machine that a bundle must not reveal (each as given and as resolved)."""

    home: tuple[str, ...] = ()
    data_dir: tuple[str, ...] = ()
    run_dir: tuple[str, ...] = ()
    tmp_dirs: tuple[str, ...] = ()


def is_plain_provider_id(provider: str) -> bool:
    """Whether ``provider`` is a plain identifier (``[A-Za-z0-9_.-]+``) that can stay in a bundle."""
    return _PLAIN_PROVIDER.fullmatch(provider) is not None


def _prefixes(facts: ScrubFacts) -> tuple[tuple[str, str], ...]:
    """(directory, placeholder), longest first; on equal length run dir before data dir before home."""
    ranked = (
        (facts.run_dir, "<run-dir>"),
        (facts.data_dir, "<data-dir>"),
        (facts.home, "<home>"),
        (facts.tmp_dirs, "<tmp>"),
    )
    pairs: dict[str, str] = {}
    for directories, placeholder in ranked:
        for directory in directories:
            trimmed = directory.rstrip("/")
            if trimmed.startswith("/") and trimmed not in pairs:
                pairs[trimmed] = placeholder
    return tuple(sorted(pairs.items(), key=lambda pair: -len(pair[0])))


def _known_pattern(prefixes: tuple[tuple[str, str], ...]) -> re.Pattern[str] | None:
    if not prefixes:
        return None
    alternatives = "|".join(re.escape(directory) for directory, _ in prefixes)
    # The directory must end where a path component ends: /home/u is not the start of /home/user, but it is
    # the start of /home/u/x, /home/u: and the sentence-ending /home/u.
    return re.compile(_START + f"(?:{alternatives})" + r"(?![\w~+@%-])(?!\.[\w~+@%-])")


def _trim_dots(path: str) -> tuple[str, str]:
    body = path.rstrip(".")
    return (body, path[len(body) :]) if body not in ("", "/") else (path, "")


def scrub_text(text: str, facts: ScrubFacts) -> str:
    """``text`` with every absolute path replaced by its placeholder (see the module rules)."""
    prefixes = _prefixes(facts)
    known = _known_pattern(prefixes)
    if known is not None:
        placeholder_of = dict(prefixes)
        text = known.sub(lambda m: placeholder_of[m.group()], text)

    def other(match: re.Match[str]) -> str:
        _, dots = _trim_dots(match.group())
        return "<path>" + dots

    return _ANY_PATH.sub(other, text)


def _map_mapping(value: Mapping[str, object], change: Callable[[str], str]) -> dict[str, object]:
    return {change(str(k)): _map_strings(v, change) for k, v in value.items()}


def _map_strings(value: object, change: Callable[[str], str]) -> object:
    """``value`` rebuilt with ``change`` applied to every string, dict keys included (tuples become lists)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return _map_mapping(value, change)
    if isinstance(value, list | tuple):
        return [_map_strings(item, change) for item in value]
    return value


def _provider_id(bundle: Mapping[str, object]) -> str | None:
    report = bundle.get("report")
    conditions = report.get("conditions") if isinstance(report, Mapping) else None
    provider = conditions.get("provider") if isinstance(conditions, Mapping) else None
    return provider if isinstance(provider, str) else None


def _steps(bundle: Mapping[str, object], facts: ScrubFacts) -> Iterable[Callable[[str], str]]:
    provider = _provider_id(bundle)
    if provider and not is_plain_provider_id(provider):
        yield lambda text: text.replace(provider, CUSTOM_ENDPOINT)
    yield lambda text: scrub_text(text, facts)


def scrub_bundle(bundle: Mapping[str, object], facts: ScrubFacts) -> dict[str, object]:
    """The bundle with the provider id made anonymous (when it is not plain) and every absolute path replaced.

    Args:
        bundle: JSON-like data, ``{"schemaVersion", "report", "runs", "markdown"}``; every string is scrubbed,
            dict keys included.
        facts: the directories that get their own placeholder.

    Returns:
        A new JSON-like dict (lists for sequences); ``bundle`` is not changed.
    """
    result = dict(bundle)
    for step in tuple(_steps(bundle, facts)):
        result = _map_mapping(result, step)
    return result
