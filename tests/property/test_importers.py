"""Properties of the importers' pure mapping (``alisio.core.lab.suites.importers`` and ``...harbor``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.suites.harbor import DEFAULT_WORKDIR, harbor_workdir, used_directories
from alisio.core.lab.suites.importers import EXERCISM_DOCS, exercism_prompt, exercism_suite

WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
DOCS = st.fixed_dictionaries({}, optional={name: WORDS for name in EXERCISM_DOCS})


@given(DOCS)
def test_the_prompt_keeps_every_doc_in_order_and_ends_with_what_to_change(docs: dict[str, str]) -> None:
    prompt = exercism_prompt("leap", docs, ["leap.py"], ["leap_test.py"])
    parts = [docs[name].strip() for name in EXERCISM_DOCS if docs.get(name, "").strip()]
    at = 0
    for part in parts:
        found = prompt.find(part, at)
        assert found >= at, (part, prompt)
        at = found + len(part)
    closing = prompt[at:]
    assert closing.startswith("\n\n####\n\n" if parts else "") and closing.endswith(
        "Change only leap.py; keep the names of its functions and classes, which the tests call, and use only "
        "the standard library.\n"
    )


@given(DOCS, WORDS)
def test_an_exercise_needs_instructions_and_its_words_change_the_version(
    docs: dict[str, str], extra: str
) -> None:
    files = {
        "leap.py": "def leap_year(y):\n    pass\n",
        "leap_test.py": "import unittest\n",
        "e.py": "x = 1\n",
    }
    config = {"files": {"solution": ["leap.py"], "test": ["leap_test.py"], "example": ["e.py"]}}
    result = exercism_suite([("leap", config, {**files, **docs})], "track")
    if not docs.get(".docs/instructions.md", "").strip():
        assert result.failure().startswith("leap/.docs/instructions.md: missing or empty")
        return
    suite, _ = result.unwrap()
    changed = {**docs, ".docs/instructions.md": docs[".docs/instructions.md"] + "\nMore." + extra}
    other, _ = exercism_suite([("leap", config, {**files, **changed})], "track").unwrap()
    assert other["suiteVersion"] != suite["suiteVersion"]
    assert suite["tasks"][0]["prompt"] == exercism_prompt("leap", docs, ["leap.py"], ["leap_test.py"])


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ('[ "$(cat /app/hello.txt 2>/dev/null)" = x ] && echo 1 > /logs/verifier/reward.txt', ["/app"]),
        ("cd /workspace && python3 -m pytest /tests/test_outputs.py", ["/workspace"]),
        ('assert Path("/workspace/out.txt").read_text() == "done"', ["/workspace"]),
        ("PATH=/usr/local/bin:/code/bin:$PATH", ["/code"]),
        ("curl -s https://example.org/app/x; echo $HOME/app ${DIR}/app ~/app", []),
        ("ls /hello.txt /tmp/x /root/.cache /opt/venv/bin/python", []),
        ("# cd /elsewhere", []),
    ],
)
def test_the_directories_a_test_names(line: str, found: list[str]) -> None:
    assert used_directories("tests/test.sh", line) == [("tests/test.sh", d) for d in found]


DIRECTORIES = st.sampled_from(["/app", "/workspace", "/code", "/testbed", "/src"])


@given(DIRECTORIES, DIRECTORIES, st.booleans())
def test_the_workdir_is_the_dockerfiles_or_the_tests_one_and_never_a_guess(
    a: str, b: str, declared: bool
) -> None:
    dockerfile = a if declared else None
    assert harbor_workdir(dockerfile, []) == Success(a if declared else DEFAULT_WORKDIR)
    assert harbor_workdir(dockerfile, [("tests/test.sh", a)]) == Success(a)
    other = harbor_workdir(dockerfile, [("tests/test.sh", a), ("tests/t.py", b)])
    if a == b:
        assert other == Success(a)
    else:
        assert isinstance(other, Failure) and other.failure().endswith("so these tests cannot be honoured")
        assert b in other.failure()
