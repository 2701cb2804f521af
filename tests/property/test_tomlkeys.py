"""Properties of alisio.core.harness.tomlkeys: the key a TOML document sets twice is named, and only then."""

from __future__ import annotations

import json
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.tomlkeys import DuplicateKey, duplicate_key

bare_keys = st.text(alphabet="abcXYZ-09", min_size=1, max_size=6)
values = st.one_of(
    st.integers(-5, 5).map(str),
    st.text(alphabet='ab #="\\\n', max_size=8).map(lambda text: json.dumps(text)),
    st.text(alphabet="ab #=\n", max_size=8).map(lambda text: f'"""\n{text}"""'),
    st.text(alphabet='ab #=\n"', max_size=8).map(lambda text: f"'''{text}'''"),
)


@st.composite
def documents(draw: st.DrawFn) -> tuple[list[tuple[str, list[tuple[str, str]]]], str]:
    """A valid document: tables (the first one the root, ``""``) with unique keys, and its text."""
    names = draw(st.lists(bare_keys.map(lambda name: "t_" + name), unique=True, max_size=3))
    tables = [
        (table, draw(st.lists(st.tuples(bare_keys, values), unique_by=lambda kv: kv[0], max_size=4)))
        for table in ["", *names]
    ]
    lines: list[str] = []
    for table, pairs in tables:
        if table:
            lines.append(f"[{table}]")
        lines.extend(f"{key} = {value}" for key, value in pairs)
    return tables, "\n".join(lines) + "\n"


@given(documents())
def test_a_valid_document_has_no_duplicate(case: tuple[list[tuple[str, list[tuple[str, str]]]], str]) -> None:
    """What tomllib accepts is never reported, whatever strings hold (#, =, quotes, newlines)."""
    _, text = case
    tomllib.loads(text)
    assert duplicate_key(text) is None


@given(documents(), st.data())
def test_a_key_repeated_in_its_table_is_named_with_both_lines(
    case: tuple[list[tuple[str, list[tuple[str, str]]]], str], data: st.DataObject
) -> None:
    """Append a key again at the end of its table: tomllib refuses it and duplicate_key names it, dotted."""
    tables, _ = case
    candidates = [(index, key) for index, (_, pairs) in enumerate(tables) for key, _ in pairs]
    if not candidates:
        return
    index, key = data.draw(st.sampled_from(candidates))
    tables[index][1].append((key, "1"))
    lines: list[str] = []
    for table, pairs in tables:
        if table:
            lines.append(f"[{table}]")
        lines.extend(f"{name} = {value}" for name, value in pairs)
    text = "\n".join(lines) + "\n"
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(text)
    found = duplicate_key(text)
    table = tables[index][0]
    assert found is not None and found.key == (f"{table}.{key}" if table else key)
    assert found.first_line < found.line
    assert text.split("\n")[found.line - 1] == f"{key} = 1"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('a = 1\n"a" = 2\n', DuplicateKey(key="a", first_line=1, line=2)),
        ('s = """\nk = 1\n"""\nk = 1\nk = 2\n', DuplicateKey(key="k", first_line=4, line=5)),
        ("[t]\nx.y = 1 # c\nx . 'y' = 2\n", DuplicateKey(key="t.x.y", first_line=2, line=3)),
        ("[[t]]\na = 1\n[[t]]\na = 1\n", None),
        ('a = "#"\nb = 1\n', None),
    ],
)
def test_known_documents(text: str, expected: DuplicateKey | None) -> None:
    """Quoted and dotted spellings are the same key; strings and comments are skipped; array tables reset."""
    assert duplicate_key(text) == expected
