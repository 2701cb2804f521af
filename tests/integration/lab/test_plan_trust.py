"""The trust rule through ``eval plan``: ``eval run --plan`` runs the plan without asking, so a suite from
outside the bundled ones is confirmed when the plan is written. Before, ``eval plan ./suite`` neither warned
nor asked, and ``eval run --plan`` took the plan as confirmed: the suite's commands ran with nobody asked."""

from __future__ import annotations

from pathlib import Path

from tests.integration.helpers import FIX, alisio, make_suite, read_runs, write_script

WARNING = (
    "warning: suite calc-suite is not a bundled suite (calc-suite): its verifier commands and the tools it "
)
REFUSED = (
    "alisio eval plan: refusing to run a suite from outside the bundled ones without a terminal to confirm it; "
    "pass --yes to accept it\n"
)
GRANTS = ("--allow-write", "--allow-process")


def test_a_plan_of_a_suite_from_outside_is_confirmed_when_it_is_written(tmp_path: Path) -> None:
    make_suite(tmp_path)
    script = write_script(tmp_path / "fix.json", FIX)
    plan = tmp_path / "plan.json"
    args = ("eval", "plan", "./calc-suite", "-k", "2", "--script", script, *GRANTS, "--out", plan)
    refused = alisio(tmp_path, *args, cwd=tmp_path, process=True)
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.startswith(WARNING) and refused.stderr.endswith(REFUSED), refused.stderr
    assert not plan.exists()
    written = alisio(tmp_path, *args, "--yes", cwd=tmp_path, process=True)
    assert written.returncode == 0, written.stderr
    assert written.stderr.startswith(WARNING) and "wrote " in written.stderr
    # confirmed once: the plan runs where no terminal can answer, without --yes
    out = tmp_path / "out"
    ran = alisio(tmp_path, "eval", "run", "--plan", plan, "--out", out, cwd=tmp_path, process=True)
    assert ran.returncode == 0, ran.stderr
    assert [(r.task_id, r.status.value) for r in read_runs(out)] == [("fix-add", "pass")] * 2


def test_a_plan_of_a_bundled_suite_asks_nothing(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    script = write_script(tmp_path / "fix.json", FIX)
    done = alisio(
        tmp_path, "eval", "plan", "smoke-coding", "--tasks", "fix-add", "-k", "1", "--script", script, *GRANTS,
        "--out", plan,
        process=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr and plan.is_file()
