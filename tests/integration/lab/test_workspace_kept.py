"""alisio.shell.lab.workspace_kept on real temporary fixtures: what a run's kept diff reads, and what it costs."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

from alisio.core.lab.runs.workspace_diff import kept_diff
from alisio.shell.lab.workspace import prepare_workspace, snapshot_tree
from alisio.shell.lab.workspace_kept import changes_of

MIB = 1 << 20


def test_files_past_the_cap_are_named_by_hash_and_never_read(tmp_path: Path) -> None:
    """A run that wrote 40 text files of 1 MiB against a cap of 64 KiB: the first file's text passes the cap,
    so the others are named by their hash and size without being read: memory stays at one file's alignment
    (its lines and patch, 20 MiB for 1 MiB of short lines), where reading them all held 65 MiB. The record
    says the diff, of at least that size, was not kept."""
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "README").write_text("a fixture\n")
    with prepare_workspace(fixture, fixture_git=False, keep=False, prefix="alisio-kept-test-") as ws:
        for n in range(40):
            (ws.path / f"out{n:02}.txt").write_text(f"line {n:02}\n" * (MIB // 8))
        after = snapshot_tree(ws.path)
        tracemalloc.start()
        try:
            diff, complete = changes_of(ws, after, (), cap=64 << 10)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert not complete and len(diff.changes) == 40
    first, *rest = diff.changes
    assert first.kind == "text" and len(first.patch) > 64 << 10
    assert all(c.kind == "binary" and c.patch == "" and c.size == MIB for c in rest)
    expected = hashlib.sha256(b"line 05\n" * (MIB // 8))
    assert rest[4].sha256 == expected.hexdigest()
    assert peak < 32 * MIB, f"{peak / MIB:.1f} MiB held"
    data, kept = kept_diff(diff, 64 << 10, complete=complete)
    assert data == b"" and not kept.kept and kept.files == 40
    assert kept.reason == (
        f"the diff holds more than {kept.bytes:,} bytes (the rest of its files not read), more than the 65,536 "
        "a run keeps"
    )


def test_a_diff_under_the_cap_is_read_whole(tmp_path: Path) -> None:
    """Under the cap every file is read: complete, and kept."""
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "a.txt").write_text("one\ntwo\n")
    with prepare_workspace(fixture, fixture_git=False, keep=False, prefix="alisio-kept-test-") as ws:
        (ws.path / "a.txt").write_text("one\n2\n")
        (ws.path / "b.txt").write_text("new\n")
        diff, complete = changes_of(ws, snapshot_tree(ws.path), ())
    assert complete and [(c.path, c.change, c.kind) for c in diff.changes] == [
        ("a.txt", "modified", "text"),
        ("b.txt", "added", "text"),
    ]
    assert kept_diff(diff, complete=complete)[1].kept
