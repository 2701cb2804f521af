"""``alisio eval import`` against hostile sources: the trust rule and the sandbox for the imported tests the
self-check runs, links that leave the source, and the progress an import shows.

- A HumanEval problem and an Exercism exercise whose tests write a file outside ``--out``: without ``--yes``
  (and no terminal) nothing runs and nothing is written; with ``[lab] sandbox = "bwrap"`` they run in the
  sandbox and the file is not written; with ``--yes`` and no sandbox they run as the warning said, and write it
  (which shows the hostile test is real).
- A link out of the source, for each importer: HumanEval's SOURCE, an Exercism exercise's instructions and
  test file, a Harbor task's instruction.md and test file: refused, naming the link; the secret the link points
  at is in no file of the output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.integration.helpers import alisio, write_config
from tests.integration.lab.test_eval_import import harbor_task, tiny_track, write_jsonl

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

GOOD = {"task_id": "X/0", "prompt": "def f():\n", "canonical_solution": "    return 1\n",
        "test": "def check(c):\n    assert c() == 1\n", "entry_point": "f"}  # fmt: skip
SECRET = "the-secret-of-the-host-0123"


def _hostile_source(kind: str, root: Path, pwned: Path) -> Path:
    """A source whose tests write ``pwned`` (outside every --out) when they run."""
    write = f"open({str(pwned)!r}, 'w').write('pwned')\n"
    if kind == "humaneval":
        problem = {**GOOD, "test": write + GOOD["test"]}
        root.mkdir()
        return write_jsonl(root / "HumanEval.jsonl", [problem])
    track = tiny_track(root)
    test = track / "exercises/practice/leap/leap_test.py"
    test.write_text(write + test.read_text())
    return track


def _outputs(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir() if p.name.startswith((".out", "out")))


@needs_bwrap
@pytest.mark.parametrize("kind", ["humaneval", "exercism"])
def test_the_imported_tests_run_only_when_trusted_and_where_the_sandbox_says(
    tmp_path: Path, kind: str
) -> None:
    """Refused without --yes (nothing ran, nothing written); sandboxed by [lab] sandbox (the file outside
    --out is not written); unsandboxed with --yes they run as the warning says."""
    pwned = tmp_path / "pwned"
    source = _hostile_source(kind, tmp_path / "src", pwned)
    refused = alisio(tmp_path, "eval", "import", kind, source, "--out", tmp_path / "out")
    assert refused.returncode == 1
    warning = (
        f"warning: the self-check runs the tests imported from {source} ({kind}) now: they run with your "
        "privileges, not sandboxed. Only import sources you trust."
    )
    assert warning in refused.stderr.splitlines(), refused.stderr
    assert refused.stderr.splitlines()[-1] == (
        "alisio eval import: refusing to run the imported tests without a terminal to confirm it; pass --yes "
        "to accept them (nothing was imported)"
    )
    assert not pwned.exists() and _outputs(tmp_path) == []
    write_config(tmp_path, '[lab]\nsandbox = "bwrap"\n')
    boxed = alisio(tmp_path, "eval", "import", kind, source, "--out", tmp_path / "out", "--yes")
    assert "they run in the bwrap sandbox (a shared kernel, not a VM)" in boxed.stderr, boxed.stderr
    assert "at once, in the bwrap sandbox)" in boxed.stderr
    assert not pwned.exists(), "a sandboxed test wrote outside --out"
    assert (tmp_path / "out" / "parity.json").is_file(), boxed.stderr
    write_config(tmp_path, "")
    plain = alisio(tmp_path, "eval", "import", kind, source, "--out", tmp_path / "out2", "--yes")
    assert warning in plain.stderr.splitlines(), plain.stderr
    assert (
        pwned.read_text() == "pwned"
    )  # unsandboxed, the hostile test did run: the sandbox is what stopped it


def test_a_humaneval_source_that_links_out_of_its_directory_is_refused(tmp_path: Path) -> None:
    """SOURCE a link to a file elsewhere: refused naming it; a link beside it is followed."""
    elsewhere = write_jsonl(tmp_path / "elsewhere.jsonl", [{**GOOD, "prompt": f"# {SECRET}\ndef f():\n"}])
    (tmp_path / "data").mkdir()
    link = tmp_path / "data" / "HumanEval.jsonl"
    link.symlink_to(elsewhere)
    refused = alisio(tmp_path, "eval", "import", "humaneval", link, "--out", tmp_path / "out", "--yes")
    assert refused.returncode == 1
    assert refused.stderr == (
        f"alisio eval import: {link}: a symbolic link that leaves the source {tmp_path / 'data'} (to "
        f"{elsewhere})\n"
    )
    assert not (tmp_path / "out").exists()
    beside = tmp_path / "data" / "real.jsonl"
    shutil.copy(elsewhere, beside)
    link.unlink()
    link.symlink_to("real.jsonl")
    done = alisio(tmp_path, "eval", "import", "humaneval", link, "--out", tmp_path / "out", "--yes")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("linked", [".docs/instructions.md", "leap_test.py", ".meta/example.py"])
def test_an_exercism_file_that_links_out_of_the_track_is_refused(tmp_path: Path, linked: str) -> None:
    """The instructions (the prompt), a test file, the example: a link out of the track is refused, naming it,
    and nothing is written (the secret is nowhere)."""
    track = tiny_track(tmp_path / "src")
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    link = track / "exercises/practice/leap" / linked
    link.unlink()
    link.symlink_to(secret)
    refused = alisio(tmp_path, "eval", "import", "exercism", track, "--out", tmp_path / "out", "--yes")
    assert refused.returncode == 1
    assert refused.stderr == (
        f"alisio eval import: {link}: a symbolic link that leaves the source {track} (to {secret})\n"
    )
    assert _outputs(tmp_path) == []


@needs_bwrap
@pytest.mark.parametrize("linked", ["instruction.md", "tests/test.sh", "solution/solve.sh", "task.toml"])
def test_a_harbor_task_that_links_out_of_the_source_is_refused_and_listed(
    tmp_path: Path, linked: str
) -> None:
    """One task's file links out of the source: that task is refused (naming the link) and the other imported;
    the secret is in no file of the suite."""
    tasks = tmp_path / "tasks"
    harbor_task(tasks, "hello-world")
    evil = harbor_task(tasks, "evil")
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    (evil / linked).unlink()
    (evil / linked).symlink_to(secret)
    done = alisio(tmp_path, "eval", "import", "harbor", tasks, "--out", tmp_path / "out", "--yes")
    assert done.returncode == 0, done.stderr
    assert (
        f"alisio eval import: refused evil: {evil / linked}: a symbolic link that leaves the source {tasks} "
        f"(to {secret})"
    ) in done.stderr.splitlines(), done.stderr
    suite = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert [task["id"] for task in suite["tasks"]] == ["hello-world"]
    for path in (tmp_path / "out").rglob("*"):
        assert path.is_dir() or SECRET not in path.read_text(), path


@needs_bwrap
def test_a_harbor_tests_directory_that_links_out_is_refused(tmp_path: Path) -> None:
    """``tests`` itself a link to a directory outside the source: the task is refused, naming a file in it."""
    tasks = tmp_path / "tasks"
    evil = harbor_task(tasks, "evil")
    harbor_task(tasks, "hello-world")
    outside = tmp_path / "outside"
    shutil.move(evil / "tests", outside)
    (evil / "tests").symlink_to(outside)
    done = alisio(tmp_path, "eval", "import", "harbor", tasks, "--out", tmp_path / "out", "--yes")
    assert done.returncode == 0, done.stderr
    assert f"alisio eval import: refused evil: {evil / 'tests' / 'test.sh'}: a symbolic link" in done.stderr


def test_an_import_shows_each_task_as_it_is_checked_and_its_help_names_harbor(tmp_path: Path) -> None:
    """A line per task on stderr as it is self-checked (``[i/n] id: no-op ..., oracle ..., repeat ...``),
    flagged tasks naming their first flag; ``eval import -h`` names HumanEval, Exercism and Harbor."""
    track = tiny_track(tmp_path / "src")
    (track / "exercises/practice/leap/.meta/example.py").write_text("def leap_year(year):\n    return True\n")
    done = alisio(
        tmp_path, "eval", "import", "exercism", track, "--out", tmp_path / "out", "--yes", "-j", "1"
    )
    assert done.returncode == 1, done.stderr  # leap's example is wrong: flagged
    lines = done.stderr.splitlines()
    assert lines[0].startswith("warning: the self-check runs the tests imported from")
    assert lines[1] == "self-checking 2 tasks (1 at once, not sandboxed)"
    assert lines[2] == "[1/2] hello-world: no-op fails, oracle passes, repeat same (1x)"
    flagged = "[2/2] leap: no-op fails, oracle FAILS, repeat same (1x): flagged: the reference solution does "
    assert lines[3].startswith(flagged + "not pass: check: exit 1 (expected 0); stderr:"), lines[3]
    assert len(lines[3]) == len(flagged) - len("the reference solution does ") + 120 and lines[3][-1] == "…"
    assert lines[4].startswith("imported exercism-python ")
    shown = alisio(tmp_path, "eval", "import", "-h", env={"COLUMNS": "200"})
    assert shown.returncode == 0
    assert "HumanEval, an Exercism track, Harbor tasks" in " ".join(shown.stdout.split())
    assert "--sandbox" in shown.stdout and "--yes" in shown.stdout
