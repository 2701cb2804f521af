"""Generators for the secret scanner and the export scrubber: JSON-like data, key-shaped secrets, paths."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator

from hypothesis import strategies as st

SAFE_ALPHABET = string.ascii_lowercase + string.digits + " .,:;/()"
"""Text from this alphabet holds no secret shape: every shape needs an upper-case letter, '-', '_' or 'bearer'."""

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"

safe_text = st.text(alphabet=SAFE_ALPHABET, max_size=30).filter(lambda t: "bearer" not in t)
keys = st.text(alphabet=string.ascii_letters + string.digits + " _", min_size=1, max_size=8)

JsonLike = object

json_like: st.SearchStrategy[JsonLike] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**31), 2**31)
    | st.floats(allow_nan=False, allow_infinity=False)
    | safe_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=15,
)


def _body(size: int, alphabet: str = ALNUM) -> st.SearchStrategy[str]:
    """``size`` characters of ``alphabet`` with a digit and an upper-case letter somewhere (real keys do)."""
    return st.text(alphabet=alphabet, min_size=size - 2, max_size=size - 2).map(lambda t: "7" + t + "Q")


SHAPES: dict[str, st.SearchStrategy[str]] = {
    "openai-key": st.tuples(st.sampled_from(("sk-", "sk-proj-")), _body(48)).map("".join),
    "anthropic-key": _body(40).map(lambda b: "sk-ant-api03-" + b),
    "openrouter-key": st.text(alphabet=HEX, min_size=64, max_size=64).map(lambda b: "sk-or-v1-" + b + "0"),
    "deepseek-key": st.text(alphabet=HEX, min_size=31, max_size=31).map(lambda b: "sk-" + b + "1"),
    "groq-key": _body(52).map(lambda b: "gsk_" + b),
    "xai-key": _body(80).map(lambda b: "xai-" + b),
    "google-api-key": _body(35).map(lambda b: "AIza" + b),
    "aws-access-key": _body(16, string.ascii_uppercase + string.digits).map(lambda b: "AKIA" + b),
    "github-token": st.one_of(
        _body(36).map(lambda b: "ghp_" + b), _body(60, ALNUM + "_").map(lambda b: "github_pat_" + b)
    ),
    "slack-token": _body(24).map(lambda b: "xoxb-1234567890-" + b),
    "huggingface-token": _body(34).map(lambda b: "hf_" + b),
    "stripe-key": _body(24).map(lambda b: "sk_live_" + b),
    "private-key-block": st.sampled_from(("RSA ", "OPENSSH ", "EC ", "")).map(
        lambda k: f"-----BEGIN {k}PRIVATE KEY-----\nMIIEow\n-----END {k}PRIVATE KEY-----"
    ),
    "jwt": st.tuples(_body(20), _body(30), _body(43)).map(lambda p: f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}"),
    "bearer-credential": _body(32).map(lambda b: "Authorization: Bearer " + b),
}
"""A strategy of secrets for each kind the scanner names."""

shaped_secrets = st.sampled_from(sorted(SHAPES)).flatmap(lambda kind: st.tuples(st.just(kind), SHAPES[kind]))

_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


def path_of(steps: tuple[str | int, ...]) -> str:
    """The scanner's path for a location: keys as ``.name`` (``["a b"]`` when not plain), items as ``[i]``."""
    path = ""
    for step in steps:
        if isinstance(step, int):
            path += f"[{step}]"
        elif _PLAIN_KEY.fullmatch(step):
            path += f".{step}" if path else step
        else:
            path += f"[{json.dumps(step)}]"
    return path


def slots(value: JsonLike, steps: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every location in ``value`` a string could be put: the value itself, and each item and dict value."""
    yield steps
    if isinstance(value, dict):
        for key, item in value.items():
            yield from slots(item, (*steps, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from slots(item, (*steps, index))


def put(value: JsonLike, steps: tuple[str | int, ...], leaf: JsonLike) -> JsonLike:
    """A copy of ``value`` with ``leaf`` at ``steps``."""
    if not steps:
        return leaf
    head, rest = steps[0], steps[1:]
    if isinstance(value, dict):
        return {k: put(v, rest, leaf) if k == head else v for k, v in value.items()}
    assert isinstance(value, list)
    return [put(v, rest, leaf) if i == head else v for i, v in enumerate(value)]


@st.composite
def with_leaf(draw: st.DrawFn, leaf: str) -> tuple[JsonLike, str]:
    """Safe JSON-like data with ``leaf`` (surrounded by safe words) at one location, and that location's path."""
    data = draw(json_like)
    steps = draw(st.sampled_from(list(slots(data))))
    text = " ".join((draw(safe_text), leaf, draw(safe_text)))
    return put(data, steps, text), path_of(steps)


segments = st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1, max_size=8).filter(
    lambda s: s.strip(".") != ""
)
absolute_paths = st.lists(segments, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))
relative_paths = st.lists(segments, min_size=1, max_size=3).map("/".join) | st.lists(
    segments, min_size=1, max_size=3
).map(lambda parts: "./" + "/".join(parts))
urls = st.tuples(
    st.sampled_from(("http://", "https://")),
    st.from_regex(r"[a-z]{1,8}(\.[a-z]{2,5}){0,2}(:[0-9]{2,5})?", fullmatch=True),
    st.lists(segments, max_size=3).map(lambda parts: "".join("/" + p for p in parts)),
).map("".join)
fractions = st.tuples(st.integers(0, 100), st.integers(1, 100)).map(lambda p: f"{p[0]}/{p[1]}")
words = st.text(alphabet=string.ascii_letters + string.digits + ".,:;()'\"", min_size=1, max_size=8)
