"""Every shape problem of decoded JSON against a msgspec type, each with its field path.

msgspec stops at the first error, and its path lives only inside the message text (``- at `$.tasks[0]```).
A suite author wants every typo at once, so this module walks the decoded value (builtins from
``msgspec.json.decode``) along the target type and reports each problem separately:

- a Struct: every unknown key (with a "did you mean" hint), every missing required field, and each
  present field recursively;
- ``tuple[X, ...]``: each item;
- a union of tagged Structs: the tag is checked first (missing, or not one of the tags), then that Struct;
- ``Annotated[X, Meta(...)]``: ``X`` first, then the constraints;
- anything else is a leaf: ``msgspec.convert`` (strict) decides, and its message is rewritten in plain
  words (``at most 600000``, ``expected an integer, got a string``, ``unknown effect "x" (expected ...)``).

Rules it keeps: pure (no I/O); never raises on any decoded JSON value; a value with no problems converts
with ``msgspec.convert(value, type)``; every message is one line (values are shown JSON-escaped).

``duplicate_keys`` works on the text instead: a JSON decoder keeps the last of two equal keys in an object,
so ``{"maxTurns": 5, "maxTurns": 500}`` would run with 500 while the author reads 5. It finds every repeated
key with its path, so a human-written file can refuse them.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import types
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

__all__ = [
    "FieldPath",
    "Noun",
    "Problem",
    "did_you_mean",
    "duplicate_keys",
    "expected_got",
    "json_repr",
    "parse_msgspec_path",
    "shape_problems",
    "words",
]

FieldPath = tuple[str | int, ...]
"""A path into a JSON document: object keys (wire names) and array indices."""

Problem = tuple[FieldPath, str]
"""One violation: where (a field path) and what (a one-line message)."""

Noun = str | Callable[[object], str]
"""What messages call a type: a noun, or (for a pattern-constrained type) the whole message for a value that
does not match it (when a fixed noun cannot say it, e.g. the closest known name)."""
_NO_NOUNS: Mapping[Any, Noun] = MappingProxyType({})
_JSON_KIND = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "a boolean",
    "null": "null",
    "array": "an array",
    "object": "an object",
}


def json_repr(value: object, limit: int = 60) -> str:
    """``value`` as short, one-line JSON (strings quoted and escaped), for messages."""
    try:
        text = msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def words(options: tuple[object, ...]) -> str:
    """``a, b or c`` (JSON values are shown bare when they are plain strings)."""
    shown = [str(o) for o in options]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _kind_of(value: object) -> str:
    match value:
        case bool():
            return _JSON_KIND["bool"]
        case int():
            return _JSON_KIND["int"]
        case float():
            return _JSON_KIND["float"]
        case str():
            return _JSON_KIND["str"]
        case None:
            return _JSON_KIND["null"]
        case list():
            return _JSON_KIND["array"]
        case _:
            return _JSON_KIND["object"]


_MSGSPEC_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_PATH_TOKEN = re.compile(r"\.(?P<key>[^.\[]+)|\[(?P<index>\d+)\]")


def parse_msgspec_path(message: str) -> tuple[str, FieldPath]:
    """Split a msgspec error message into its text and the path from its ``- at `$...``` suffix."""
    found = _MSGSPEC_PATH.search(message)
    if found is None:
        return message, ()
    path: list[str | int] = []
    for token in _PATH_TOKEN.finditer(found["path"]):
        path.append(int(token["index"]) if token["index"] is not None else token["key"])
    return message[: found.start()], tuple(path)


_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Expected `(int|float)` >= (-?[\d.]+)$"), r"at least \2"),
    (re.compile(r"^Expected `(int|float)` <= (-?[\d.]+)$"), r"at most \2"),
    (re.compile(r"^Expected `(array|str)` of length >= 1$"), "must not be empty"),
    (re.compile(r"^Expected `(array|str)` of length >= (\d+)$"), r"needs at least \2 items"),
)


def expected_got(message: str) -> str | None:
    """msgspec's ``Expected `str`, got `int``` in words (``expected a string, got an integer``), else None."""
    found = re.fullmatch(r"Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`", message)
    if found is None:
        return None
    wanted = [_JSON_KIND.get(part.strip(), part.strip()) for part in found["want"].split("|")]
    return f"expected {words(tuple(wanted))}, got {_JSON_KIND.get(found['got'], found['got'])}"


def did_you_mean(value: object, known: tuple[str, ...]) -> str:
    """``did you mean command? `` when ``value`` is a string close to one of ``known`` (a typo), else ``""``."""
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, known, n=1, cutoff=0.8)
    return f"did you mean {close[0]}? " if close else ""


def _leaf_message(value: object, typ: Any, message: str, nouns: Mapping[Any, Noun]) -> str:
    literal = _literal_of(typ)
    if message.startswith("Invalid enum value") and literal is not None:
        noun = _named(nouns, typ, "value")
        shown = tuple(v if isinstance(v, str) else json_repr(v) for v in literal)
        return f"unknown {noun} {json_repr(value)} ({did_you_mean(value, shown)}expected {words(shown)})"
    if message.startswith("Expected `str` matching regex") and typ in nouns:
        said = nouns[typ]
        return said(value) if callable(said) else f"{json_repr(value)} is not {said}"
    rewritten = expected_got(message)
    if rewritten is not None:
        return rewritten
    for pattern, replacement in _REWRITES:
        if pattern.match(message):
            return pattern.sub(replacement, message)
    return message


def _named(nouns: Mapping[Any, Noun], typ: Any, default: str) -> str:
    noun = nouns.get(typ, default)
    return noun if isinstance(noun, str) else default


def _literal_of(typ: Any) -> tuple[object, ...] | None:
    if get_origin(typ) is Literal:
        return get_args(typ)
    if get_origin(typ) is Annotated:
        return _literal_of(get_args(typ)[0])
    return None


def _is_struct(typ: Any) -> bool:
    return isinstance(typ, type) and issubclass(typ, msgspec.Struct)


def _struct_members(typ: Any) -> tuple[type[msgspec.Struct], ...] | None:
    """The members of a union made only of tagged Structs, else None."""
    if get_origin(typ) not in (Union, types.UnionType):
        return None
    members = get_args(typ)
    if all(_is_struct(m) and m.__struct_config__.tag_field is not None for m in members):
        return members
    return None


def shape_problems(
    value: object, typ: Any, path: FieldPath = (), nouns: Mapping[Any, Noun] = _NO_NOUNS
) -> list[Problem]:
    """Every problem of ``value`` (decoded JSON) against ``typ``, in document order.

    Args:
        value: builtins as ``msgspec.json.decode`` returns them.
        typ: the msgspec target type (Structs, tuples, tagged unions, Annotated, Literal, scalars).
        path: where ``value`` sits in the document.
        nouns: what to call a Literal or a pattern-constrained type, or a tagged union's tag, in messages
            (``{Effect: "effect", Verifier: "verifier kind", Sha256: "64 lowercase hex digits"}``).

    Returns:
        ``[]`` when ``msgspec.convert(value, typ)`` succeeds; otherwise one ``(path, message)`` per problem.
    """
    if _is_struct(typ):
        return _struct_problems(value, typ, path, nouns)
    members = _struct_members(typ)
    if members is not None:
        return _union_problems(value, typ, members, path, nouns)
    origin = get_origin(typ)
    if origin is Annotated:
        inner = shape_problems(value, get_args(typ)[0], path, nouns)
        return inner or _leaf_problems(value, typ, path, nouns)
    args = get_args(typ)
    if origin in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner_type = args[0] if args[1] is type(None) else args[1]
        return [] if value is None else shape_problems(value, inner_type, path, nouns)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if not isinstance(value, list):
            return [(path, f"expected an array, got {_kind_of(value)}")]
        return [p for i, item in enumerate(value) for p in shape_problems(item, args[0], (*path, i), nouns)]
    return _leaf_problems(value, typ, path, nouns)


def _leaf_problems(value: object, typ: Any, path: FieldPath, nouns: Mapping[Any, Noun]) -> list[Problem]:
    try:
        msgspec.convert(value, typ)
    except msgspec.ValidationError as error:
        message, inner = parse_msgspec_path(str(error))
        return [((*path, *inner), _leaf_message(value, typ, message, nouns))]
    return []


@functools.cache
def _fields(typ: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """A Struct's fields with resolved types (resolving annotations is slow, and types never change)."""
    return msgspec.structs.fields(typ)


def _struct_problems(
    value: object, typ: type[msgspec.Struct], path: FieldPath, nouns: Mapping[Any, Noun]
) -> list[Problem]:
    if not isinstance(value, dict):
        return [(path, f"expected an object, got {_kind_of(value)}")]
    config = typ.__struct_config__
    fields = _fields(typ)
    known = [f.encode_name for f in fields]
    problems: list[Problem] = []
    if config.forbid_unknown_fields:
        for key in value:
            if key not in known and key != config.tag_field:
                close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
                hint = f" (did you mean {close[0]}?)" if close else ""
                problems.append(((*path, key), f"unknown field{hint}"))
    for field in fields:
        if field.encode_name in value:
            problems += shape_problems(
                value[field.encode_name], field.type, (*path, field.encode_name), nouns
            )
        elif field.required:
            problems.append(((*path, field.encode_name), "required"))
    return problems


def _union_problems(
    value: object,
    typ: Any,
    members: tuple[type[msgspec.Struct], ...],
    path: FieldPath,
    nouns: Mapping[Any, Noun],
) -> list[Problem]:
    if not isinstance(value, dict):
        return [(path, f"expected an object, got {_kind_of(value)}")]
    tag_field = str(members[0].__struct_config__.tag_field)
    by_tag = {m.__struct_config__.tag: m for m in members}
    noun = _named(nouns, typ, tag_field)
    expected = words(tuple(str(tag) for tag in by_tag))
    if tag_field not in value:
        return [((*path, tag_field), f"required (one of {expected})")]
    tag = value[tag_field]
    chosen = by_tag.get(tag) if isinstance(tag, str) else None
    if chosen is None:
        hint = did_you_mean(tag, tuple(str(t) for t in by_tag))
        return [((*path, tag_field), f"unknown {noun} {json_repr(tag)} ({hint}expected {expected})")]
    return _struct_problems(value, chosen, path, nouns)


# --- duplicate keys ------------------------------------------------------------------------------------


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers which of its keys appeared more than once (in order)."""

    repeated: tuple[str, ...] = ()


def _object_of(pairs: list[tuple[str, Any]]) -> _Object:
    value = _Object(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        repeated: dict[str, None] = {}
        for key, _ in pairs:
            if key in seen:
                repeated[key] = None
            seen.add(key)
        value.repeated = tuple(repeated)
    return value


def duplicate_keys(text: bytes | str) -> list[Problem]:
    """A problem for every key that appears more than once in one object of the JSON ``text``.

    Args:
        text: a JSON document (UTF-8 bytes or str) that a strict decoder already accepted.

    Returns:
        One ``(path to the key, message)`` per repeated key, in document order (each key once, however
        often it repeats); ``[]`` when there is none or the text is not JSON (its decoder says so). A
        document nested too deeply to walk is one problem at the root, never an exception.
    """
    try:
        root = json.loads(text, object_pairs_hook=_object_of)
    except (ValueError, RecursionError) as error:
        return (
            [] if isinstance(error, ValueError) else [((), "nested too deeply to check for duplicate keys")]
        )
    problems: list[Problem] = []
    stack: list[tuple[FieldPath, Any]] = [((), root)]
    while stack:  # iterative: a deeply nested document must not exhaust the Python stack here
        path, value = stack.pop()
        if isinstance(value, _Object):
            problems += [
                ((*path, key), "duplicate key (only one value may be given)") for key in value.repeated
            ]
            stack += [((*path, key), item) for key, item in reversed(value.items())]
        elif isinstance(value, list):
            stack += [((*path, index), item) for index, item in reversed(list(enumerate(value)))]
    return problems
