"""Properties of alisio.core.lab.suites.suite_paths: lexical rules and pure symlink resolution over shell facts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.suites.suite_paths import (
    PathFacts,
    SymlinkFact,
    escaping_links,
    is_within,
    lexical_problem,
    normalize,
    resolve,
)
from tests.property.strategies_suite import relative_paths

any_paths = st.lists(st.sampled_from(["a", "b", ".", "..", "", "c.txt", "\\", "C:", "/"]), max_size=5).map(
    "/".join
)


@given(any_paths)
def test_normalize_is_idempotent(path: str) -> None:
    """normalize(normalize(p)) == normalize(p), and the result has no empty or '.' segment."""
    once = normalize(path)
    assert normalize(once) == once
    assert "" not in once.split("/") or once == ""
    assert "." not in once.split("/")


@given(any_paths)
def test_a_lexically_valid_path_stays_below_its_root(path: str) -> None:
    """A path with no lexical problem is relative, has no '..', and names something below the root."""
    if lexical_problem(path, "task directory") is None:
        assert not path.startswith("/")
        assert ".." not in path.split("/")
        assert normalize(path) != ""


@given(relative_paths)
def test_resolve_without_links_is_the_identity(path: str) -> None:
    """With no symlinks a normalised path resolves to itself."""
    assert resolve(normalize(path), {}) == normalize(path)


@given(relative_paths, relative_paths, relative_paths)
def test_resolve_substitutes_a_link_prefix(link: str, target: str, rest: str) -> None:
    """A path under a link resolves under the link's target; under an outside link it leaves the suite."""
    link, target, rest = normalize(link), normalize(target), normalize(rest)
    if is_within(target, link) or is_within(link, target):
        return  # the link would be met again under its own target (a loop, or a link to its own parent)
    assert resolve(f"{link}/{rest}", {link: target}) == resolve(f"{target}/{rest}", {})
    assert resolve(f"{link}/{rest}", {link: None}) is None


def test_resolve_follows_links_found_inside_a_target() -> None:
    """Links are followed component by component, including links inside a link's target."""
    assert resolve("a/b/c", {"a": "x", "x/b": "y"}) == "y/c"
    assert resolve("a/b/c", {"a": "x", "x/b": None}) is None
    assert resolve("a/b", {"a": ""}) == "b"


@given(relative_paths, relative_paths)
def test_escaping_links_are_those_leaving_the_root(root: str, name: str) -> None:
    """Below a root, a link to inside it is fine; to a sibling or outside the suite it escapes."""
    root = normalize(root)
    inside = SymlinkFact(path=f"{root}/in-{name}", target=f"{root}/real")
    sibling = SymlinkFact(path=f"{root}/sib-{name}", target=f"{root}-other/x")
    outside = SymlinkFact(path=f"{root}/out-{name}", target=None)
    facts = PathFacts(gathered=True, symlinks=frozenset({inside, sibling, outside}))
    assert set(escaping_links(root, facts)) == {sibling, outside}


@given(st.lists(st.sampled_from(["a", "b", ".", "..", ""]), min_size=1, max_size=8))
def test_only_a_path_that_climbs_out_is_said_to_escape(segments: list[str]) -> None:
    """Every '..' is rejected; the message says "escapes" exactly when resolving the dots leaves the root."""
    path = "/".join(segments)
    problem = lexical_problem(path, "task directory")
    if ".." not in segments or path.startswith("/"):
        return
    depth, climbs = 0, False
    for segment in segments:
        depth += {"..": -1, ".": 0, "": 0}.get(segment, 1)
        climbs = climbs or depth < 0
    assert problem is not None
    assert ("escapes" in problem) == climbs, (path, problem)
    assert ".. segment" in problem
