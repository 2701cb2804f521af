"""Hostile input files through the real CLI (issue 9): each one is refused with one line naming the file and
the field, exit 1, never a traceback, and one bad suite never hides the others."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration import helpers
from tests.integration.helpers import FIX, RUN_ID, Lab, make_suite, refused, variants, write, write_script
from tests.property.strategies_report import task_runs

# --- duplicate keys --------------------------------------------------------------------------------------


def alisio(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command at the repository's root (eval compare of the example reports)."""
    return helpers.alisio(None, *args, cwd=helpers.ROOT)


def test_a_repeated_override_in_compare_json_is_refused_before_any_run(home: Path) -> None:
    """compare.json giving compaction.threshold twice (0.6 then 0.9) is refused naming the key and the
    variant, before anything runs; it is not run with the last value."""
    suite = make_suite(home)
    compare = home / "compare.json"
    compare.write_text(
        '{"suite": "calc-suite", "variants": [{"id": "baseline"}, {"id": "early", "overrides": '
        '{"compaction.threshold": 0.6, "compaction.threshold": 0.9}}]}'
    )
    script = write_script(home / "fix.json", FIX)
    result = variants(home, suite, compare, "--allow-write", "--script", str(script))
    assert refused(home, result).splitlines()[0] == (
        f"alisio eval variants: {compare}: variants[1].overrides.compaction.threshold: duplicate key "
        '(only one value may be given) in variant "early"'
    )


# --- impossible numbers in report.json -----------------------------------------------------------------


def tamper(report_json: Path, task: int, **fields: object) -> None:
    document = json.loads(report_json.read_text())
    document["tasks"][task].update(fields)
    report_json.write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"judged": -3}, "task b: judged: at least 0, got -3 (and 1 more)"),
        ({"passes": 9}, "task b: judged: 5 is not passes + fails + budgetExceeded (9 + 1 + 0) (and 2 more)"),
        ({"successRate": 1.5}, "task b: successRate: must be a number in [0, 1], got 1.5"),
    ],
)
def test_compare_refuses_a_report_with_impossible_numbers(
    tmp_path: Path, fields: dict[str, object], message: str
) -> None:
    """eval compare: exit 1, one line naming the file, the task and the field; no traceback, no output."""
    base = write(tmp_path / "base", task_runs("a", 4, 1) + task_runs("b", 4, 1), k=5)
    cand = write(tmp_path / "cand", task_runs("a", 4, 1) + task_runs("b", 4, 1), k=5)
    tamper(cand / "report.json", 1, **fields)
    result = alisio("eval", "compare", base, cand)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"alisio eval compare: {cand / 'report.json'}: impossible numbers: {message}\n"


def test_export_refuses_a_stored_report_with_impossible_numbers(tmp_path: Path) -> None:
    """eval export reads report.json through the same check: exit 1 naming the field, nothing written."""
    lab = Lab(tmp_path)
    run_dir = lab.write_run(task_runs("a", 3, 2))
    tamper(run_dir / "report.json", 0, passes=7)
    result = lab.export(RUN_ID, "--out", lab.out)
    assert result.returncode == 1
    assert "impossible numbers: task a: judged: 5 is not passes + fails + budgetExceeded (7 + 2 + 0)" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr and not lab.out.exists()
