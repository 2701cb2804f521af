"""Properties of alisio.core.share.scrub: placeholders for absolute paths, anonymous custom endpoints, idempotent."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.share.scrub import (
    CUSTOM_ENDPOINT,
    ScrubFacts,
    is_plain_provider_id,
    scrub_bundle,
    scrub_text,
)
from tests.property.strategies_secrets import absolute_paths, fractions, relative_paths, urls, words

FACTS = ScrubFacts(
    home=("/home/jane",),
    data_dir=("/home/jane/.local/state/alisio",),
    run_dir=("/home/jane/.local/state/alisio/eval/2026-10-13T12-00-00-000Z",),
    tmp_dirs=("/tmp", "/var/folders/x1/T"),
)
RUN = FACTS.run_dir[0]
KNOWN = {
    RUN: "<run-dir>",
    FACTS.data_dir[0]: "<data-dir>",
    FACTS.home[0]: "<home>",
    **dict.fromkeys(FACTS.tmp_dirs, "<tmp>"),
}
RAW_ABSOLUTE = re.compile(r"(?:^|[\s\"'(=,;:\[])/[\w.~+@%-]")

known_paths = st.sampled_from((RUN, FACTS.data_dir[0], FACTS.home[0], *FACTS.tmp_dirs)).flatmap(
    lambda d: st.one_of(st.just(d), relative_paths.map(lambda rest: f"{d}/{rest.removeprefix('./')}"))
)
fragments = st.one_of(
    absolute_paths.map(lambda p: ("absolute", p)),
    known_paths.map(lambda p: ("absolute", p)),
    relative_paths.map(lambda p: ("kept", p)),
    urls.map(lambda p: ("kept", p)),
    fractions.map(lambda p: ("kept", p)),
    words.map(lambda p: ("kept", p)),
)


def expected_scrub(kind: str, fragment: str) -> str:
    """The oracle: a known directory (longest first) becomes its placeholder, any other absolute path
    <path> (a trailing full stop stays), everything else is unchanged."""
    if kind == "kept":
        return fragment
    for directory, placeholder in sorted(KNOWN.items(), key=lambda pair: -len(pair[0])):
        if fragment == directory or fragment.startswith(directory + "/"):
            return placeholder + fragment[len(directory) :]
    body = fragment.rstrip(".")
    return "<path>" + fragment[len(body) :]


@given(st.lists(fragments, max_size=8), st.sampled_from((" ", "\n", "\t", ": ", " (", "=")))
@example([("absolute", "/usr/bin/python3"), ("kept", "not"), ("kept", "found")], ": ")
@example([("absolute", "/tmp/x."), ("absolute", "/opt/a/.."), ("kept", "http://h:80/v1")], " ")
def test_absolute_paths_go_and_everything_else_stays(fragments: list[tuple[str, str]], sep: str) -> None:
    """Each absolute path becomes a placeholder (plus what follows a known directory); URLs, relative
    paths, fractions and words are untouched; and no absolute path survives."""
    scrubbed = scrub_text(sep.join(f for _, f in fragments), FACTS)
    assert scrubbed == sep.join(expected_scrub(kind, f) for kind, f in fragments)
    assert RAW_ABSOLUTE.search(scrubbed) is None


@given(st.lists(fragments, max_size=8).map(lambda fs: " ".join(f for _, f in fs)))
def test_scrubbing_is_idempotent(text: str) -> None:
    """Scrubbing scrubbed text changes nothing: placeholders are never read as paths."""
    once = scrub_text(text, FACTS)
    assert scrub_text(once, FACTS) == once


@given(st.lists(fragments, max_size=5), st.sampled_from(("https://my-host.example/v1", "local:8080", "ok")))
def test_bundles_are_scrubbed_everywhere_and_idempotently(
    fragments: list[tuple[str, str]], provider: str
) -> None:
    """Every string of the bundle is scrubbed (keys too); a second scrub changes nothing."""
    text = " ".join(f for _, f in fragments)
    bundle = {
        "schemaVersion": 1,
        "report": {"conditions": {"provider": provider, "runId": "r"}, "tasks": [{"taskId": text}]},
        "runs": [{"errors": [text, f"via {provider}"], "measured": {"wallMs": 3}}, {text: None}],
        "markdown": f"| Provider | {provider} |\n{text}\n",
    }
    once = scrub_bundle(bundle, FACTS)
    assert scrub_bundle(once, FACTS) == once
    expected = scrub_text(text, FACTS)
    assert once["runs"] == [
        {"errors": [expected, once["runs"][0]["errors"][1]], "measured": {"wallMs": 3}},
        {expected: None},
    ]  # type: ignore[index]
    shown = str(once)
    if is_plain_provider_id(provider):
        assert f"via {provider}" in shown
    else:
        assert provider not in shown
        assert once["report"]["conditions"]["provider"] == CUSTOM_ENDPOINT  # type: ignore[index]
        assert f"| Provider | {CUSTOM_ENDPOINT} |" in once["markdown"]  # type: ignore[operator]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/usr/bin/python3: not found", "<path>: not found"),
        (f"{RUN}/report.json", "<run-dir>/report.json"),
        ("/home/jane/.local/state/alisio/eval/other", "<data-dir>/eval/other"),
        ("open /home/jane/projects/a.py failed", "open <home>/projects/a.py failed"),
        ("/home/janet/x is someone else", "<path> is someone else"),
        ("kept /tmp/alisio-fix-add-k3j/src: 2 files", "kept <tmp>/alisio-fix-add-k3j/src: 2 files"),
        ("/var/folders/x1/T/alisio-x", "<tmp>/alisio-x"),
        ("written to /home/jane.", "written to <home>."),
        ("PATH=/usr/bin:/home/jane/bin", "PATH=<path>:<home>/bin"),
        ("file:///home/jane/a.txt", "file://<home>/a.txt"),
        ("'/etc/passwd' (/opt/x) [/srv/y]", "'<path>' (<path>) [<path>]"),
        ("base url http://localhost:8080/v1/chat", "base url http://localhost:8080/v1/chat"),
        ("https://my-host.example/v1", "https://my-host.example/v1"),
        (
            "3/5 passed, n/a, src/calc.py, ./x/y, ../z, $HOME/x, ~/x",
            "3/5 passed, n/a, src/calc.py, ./x/y, ../z, $HOME/x, ~/x",
        ),
        ("a / b and //host/share", "a / b and //host/share"),
    ],
)
def test_examples_from_real_reports(text: str, expected: str) -> None:
    """Paths in error messages, kept directories and PATH lists are scrubbed; URLs and prose are not."""
    assert scrub_text(text, FACTS) == expected


def test_the_most_specific_directory_wins_whatever_the_order() -> None:
    """A run dir inside the data dir inside home reads <run-dir>; home inside tmp reads <home>."""
    facts = ScrubFacts(
        home=("/tmp/h",), tmp_dirs=("/tmp/",), run_dir=("/tmp/h/d/r/",), data_dir=("/tmp/h/d",)
    )
    assert scrub_text("/tmp/h/d/r/x /tmp/h/d/y /tmp/h/z /tmp/w", facts) == (
        "<run-dir>/x <data-dir>/y <home>/z <tmp>/w"
    )


def test_a_root_or_relative_directory_is_ignored() -> None:
    """'/' or a relative directory given as a fact would swallow everything: it is not a placeholder."""
    facts = ScrubFacts(home=("/",), tmp_dirs=("tmp",))
    assert scrub_text("/etc/x and tmp/y", facts) == "<path> and tmp/y"


@pytest.mark.parametrize(
    ("provider", "plain"),
    [
        ("openai_compat", True),
        ("scripted", True),
        ("my-org.llm_v2", True),
        ("https://h/v1", False),
        ("host:8080", False),
        ("a/b", False),
        ("", False),
    ],
)
def test_plain_provider_ids(provider: str, plain: bool) -> None:
    """Plain ids are letters, digits, '_', '.', '-'; anything with '/' or ':' may embed an endpoint."""
    assert is_plain_provider_id(provider) is plain


def test_an_empty_provider_id_changes_nothing() -> None:
    """An empty provider id is not replaced (replacing '' everywhere would wreck the bundle)."""
    bundle = {"report": {"conditions": {"provider": ""}}, "markdown": "text"}
    assert scrub_bundle(bundle, FACTS) == bundle
