"""``eval runs``: a header, --suite/--model/--limit, ``--label``, registered ``--out`` runs, and ``--prune``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.integration.helpers import FIX, make_suite, read_report, write_script
from tests.integration.inprocess import alisio, in_process_home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    return in_process_home(tmp_path, monkeypatch, capsys)


def _age(directory: Path, days: int) -> None:
    old = time.time() - days * 86_400
    for root, _, files in os.walk(directory):
        for name in [*files, "."]:
            os.utime(Path(root) / name, (old, old))


def test_runs_filters_labels_registered_out_runs_and_prunes(home: Path) -> None:
    """A labelled run in the data directory and an --out run with another model: both listed under a header
    with their label; --suite, --model and --limit filter; the --out run's id opens it; --prune
    --older-than 30d removes the old stored run only, and forgets a registered directory that is gone."""
    suite = make_suite(home)
    base = ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
            "--script", str(write_script(home / "f.json", FIX))]  # fmt: skip
    labelled = alisio(home, *base, "-k", "1", "--label", "nightly fix")
    assert labelled.returncode == 0, labelled.stderr
    assert labelled.stderr.splitlines()[1].endswith("at once) [nightly fix]")
    (stored,) = (home / "data" / "eval").iterdir()
    assert read_report(stored).conditions.label == "nightly fix"
    assert "| Label | nightly fix |" in (stored / "report.md").read_text()
    mine = home / "mine"
    other = alisio(home, *base, "-k", "2", "--model", "other-model", "--out", str(mine))
    assert other.returncode == 0, other.stderr
    listed = alisio(home, "eval", "runs").stdout.splitlines()
    assert listed[0].startswith("RUN ID") and listed[0].endswith("LABEL") and len(listed) == 3
    assert "other-model (scripted)" in listed[1] and "2/2 pass" in listed[1]
    assert listed[2].startswith(stored.name) and listed[2].endswith("nightly fix")
    runs = json.loads(alisio(home, "eval", "runs", "--json").stdout)["runs"]
    out_id = runs[0]["runId"]
    assert (runs[0]["directory"], runs[1]["label"]) == (str(mine), "nightly fix")
    assert len(alisio(home, "eval", "runs", "--model", "other-model").stdout.splitlines()) == 2
    assert len(alisio(home, "eval", "runs", "--suite", "calc-suite", "--limit", "1").stdout.splitlines()) == 2
    assert "no stored runs matching" in alisio(home, "eval", "runs", "--suite", "nope").stderr
    shown = alisio(home, "eval", "show", out_id)  # a registered --out run, by its id
    assert shown.returncode == 0, shown.stderr
    _age(stored, 40)
    pruned = alisio(home, "eval", "runs", "--prune", "--older-than", "30d")
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stderr == f"removed 1 run older than 30d from {home / 'data' / 'eval'}: {stored.name}\n"
    assert not stored.exists() and (mine / "report.json").is_file()
    for path in sorted(mine.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    mine.rmdir()
    forgot = alisio(home, "eval", "runs", "--prune", "--older-than", "30d")
    assert "forgot 1 registered --out directory that holds no report now" in forgot.stderr
    bad = alisio(home, "eval", "runs", "--prune", "--older-than", "soon")
    assert bad.returncode == 1 and "--older-than: expected a whole number and a unit" in bad.stderr


def test_a_registered_variants_out_run_lists_ids_that_open(home: Path) -> None:
    """``eval variants --out DIR``: ``eval runs`` lists each variant as ``<runId>/<variant>`` (not the first
    variant's id with the variant added again), and ``eval show`` opens each id it lists."""
    suite = make_suite(home)
    compare = home / "compare.json"
    compare.write_text(json.dumps({"suite": "calc-suite", "variants": [
        {"id": "base", "overrides": {}}, {"id": "early", "overrides": {"compaction.threshold": 0.6}}]}))  # fmt: skip
    script = write_script(home / "f.json", FIX)
    ran = alisio(home, "eval", "variants", "calc-suite", "--suite-dir", str(suite), "--variants", str(compare),
                 "--yes", "--allow-write", "-k", "1", "--script", str(script), "--out", str(home / "v"))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    run_id = read_report(home / "v" / "base").conditions.run_id.split("/")[0]
    runs = json.loads(alisio(home, "eval", "runs", "--json").stdout)["runs"]
    assert sorted(r["runId"] for r in runs) == [f"{run_id}/base", f"{run_id}/early"]
    for listed in runs:
        shown = alisio(home, "eval", "show", listed["runId"])
        assert shown.returncode == 0, shown.stderr
        variant = listed["runId"].split("/")[1]
        assert shown.stdout.splitlines()[0].startswith("Agent: alisio ")  # what names the run, first
        assert shown.stdout.splitlines()[2].startswith(f"fix-add rep 0 [{variant}]: pass")
