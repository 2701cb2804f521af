"""``--pass-threshold`` and ``--scorer`` judge results from other harnesses only. Given where every input is an
alisio report (``eval compare`` of two reports, ``eval stability``, ``eval power --from`` one, or ``eval power``
with no ``--from``), they were silently ignored: a reader could believe a threshold had been applied. They are
refused there, one line naming the flags, exit 1; with a result from another harness on either side they
apply as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import ROOT, alisio

BASELINE = ROOT / "examples" / "reports" / "baseline"
CANDIDATE = ROOT / "examples" / "reports" / "candidate"
INSPECT = ROOT / "tests" / "fixtures" / "inspect"
WHY = "only for results from other harnesses (an Inspect log, a Harbor job); "
REPORTS = "these are alisio reports, whose runs their verifiers judged pass or fail"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("compare", BASELINE, CANDIDATE, "--pass-threshold", "0.5"),
            f"alisio eval compare: --pass-threshold: {WHY}{REPORTS}, so --pass-threshold would change nothing: "
            "drop it",
        ),
        (
            ("compare", BASELINE, CANDIDATE, "--pass-threshold", "0.5", "--scorer", "includes"),
            f"alisio eval compare: --pass-threshold and --scorer: {WHY}{REPORTS}, so --pass-threshold and "
            "--scorer would change nothing: drop them",
        ),
        (
            ("stability", BASELINE, CANDIDATE, "--scorer", "includes"),
            f"alisio eval stability: --scorer: {WHY}{REPORTS}, so --scorer would change nothing: drop it",
        ),
        (
            ("power", "--from", BASELINE, "--detect", "0.2", "--pass-threshold", "0.5"),
            f"alisio eval power: --pass-threshold: {WHY}{REPORTS}, so --pass-threshold would change nothing: "
            "drop it",
        ),
        (
            ("power", "--baseline-rate", "0.5", "--detect", "0.2", "--pass-threshold", "0.5"),
            f"alisio eval power: --pass-threshold: {WHY}no result is read here (--from names one), so "
            "--pass-threshold would change nothing: drop it",
        ),
    ],
    ids=["compare", "compare-both-flags", "stability", "power-from", "power"],
)
def test_the_flags_are_refused_where_every_input_is_an_alisio_report(
    tmp_path: Path, args: tuple[str | Path, ...], said: str
) -> None:
    done = alisio(tmp_path, "eval", *args, process=True)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", said + "\n")


def test_they_still_judge_a_result_from_another_harness(tmp_path: Path) -> None:
    done = alisio(
        tmp_path, "eval", "compare", INSPECT / "baseline.eval", INSPECT / "candidate.eval", "--pass-threshold",
        "0.5", "--format", "summary", process=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "mul   improved" in done.stdout
