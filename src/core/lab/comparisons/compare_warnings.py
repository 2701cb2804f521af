"""What a comparison warns of before its verdicts: conditions that differ, partial reports, different tasks.

Rules this module keeps: every condition that differs between the two sides is one line naming both values
(``model differs: a -> b``), the conditions that name a run included (``agent differs: ...``, from
``alisio.core.lab.reports.naming``, so a condition added there is warned of here with no change); a report that
stopped early or holds other tasks says what its figures then cover; a report whose tasks stopped
sequentially says that its fixed-k verdicts do not hold under that stopping, and gives its own decisions.
"""

from __future__ import annotations

from typing import Final

from alisio.core.lab.reports.naming import naming_differences
from alisio.core.lab.reports.report import Conditions, Report, finished_runs
from alisio.core.lab.reports.seq_block import SequentialBlock, describe_plan

__all__ = [
    "SEQUENTIAL_MARKS",
    "condition_warnings",
    "interrupted_warnings",
    "sequential_warnings",
    "task_set_warning",
]


def _served_warnings(b: Conditions, c: Conditions) -> list[str]:
    """What served each side, when both recorded it and it differs (same model name, another backend)."""
    out = []
    for label, old, new in (
        ("served model", b.served_models, c.served_models),
        ("system_fingerprint", b.system_fingerprints, c.system_fingerprints),
    ):
        if old and new and old != new:
            out.append(f"{label} differs: {', '.join(old)} -> {', '.join(new)} (another backend answered)")
    return out


def condition_warnings(b: Conditions, c: Conditions) -> list[str]:
    """A warning per condition that differs: the same run twice, the suite content, the mode, the harness,
    configuration, provider, model, what names the run (the agent, the script), the sandbox, what served
    each side, compaction, rates and k."""
    out: list[str] = []
    if b.run_id == c.run_id and b.created_at == c.created_at:
        out.append(f"baseline and candidate are the same run ({b.run_id}): nothing can differ")
    if b.suite_hash != c.suite_hash:
        out.append(
            f"suite content hash differs although suiteVersion {b.suite_version} matches: someone changed a "
            "fixture or verifier without bumping suiteVersion"
        )
    if b.mode is not c.mode:
        out.append(f"modes differ ({b.mode} vs {c.mode}): every task is not comparable")
    for label, old, new in (
        ("harness version", b.harness_version, c.harness_version),
        ("configuration hash", b.config_hash, c.config_hash),
        ("provider", b.provider, c.provider),
        ("model", b.model, c.model),
    ):
        if old != new:
            out.append(f"{label} differs: {old} -> {new}")
    out += naming_differences(b, c)
    if b.sandbox != c.sandbox:
        out.append(f"sandbox differs: {b.sandbox} -> {c.sandbox}")
    out += _served_warnings(b, c)
    if b.compaction != c.compaction:
        out.append("compaction settings differ: token and cost deltas are not comparable")
    if b.rates != c.rates:
        out.append("rates differ or are missing on one side: estimated costs are not compared")
    if b.k != c.k:
        out.append(f"k differs: {b.k} -> {c.k}")
    return out


def interrupted_warnings(baseline: Report, candidate: Report) -> list[str]:
    """A warning per side that Ctrl-C stopped: its tasks and rates cover only the runs that finished."""
    out: list[str] = []
    for side, report in (("baseline", baseline), ("candidate", candidate)):
        if report.capped is not None:
            out.append(
                f"the {side} is partial: stopped by {report.capped} after {finished_runs(report)}; the runs "
                "not started are missing and its rates cover the finished runs only"
            )
        elif report.interrupted:
            out.append(
                f"the {side} was interrupted after {finished_runs(report)}: tasks that never ran are missing "
                "and its rates cover the finished runs only"
            )
    return out


def task_set_warning(b_ids: set[str], c_ids: set[str]) -> list[str]:
    """A warning when the reports hold different tasks: suite-level figures then cover different tasks."""
    if b_ids == c_ids:
        return []
    only_b, only_c = sorted(b_ids - c_ids), sorted(c_ids - b_ids)
    parts = []
    if only_b:
        parts.append(f"only in the baseline: {', '.join(only_b)}")
    if only_c:
        parts.append(f"only in the candidate: {', '.join(only_c)}")
    return [
        f"the reports hold different tasks ({'; '.join(parts)}): the suite success rate compares the shared "
        "tasks only; the suite measured and cost figures cover each report's own tasks"
    ]


def _decisions(block: SequentialBlock) -> str:
    said = []
    for stop in block.tasks:
        why = f"decided {stop.direction}" if stop.reason == "decided" else (stop.reason or "not stopped")
        said.append(f"{stop.task_id} {why} after {stop.runs}")
    return "; ".join(said)


def _same_run(b: SequentialBlock, c: SequentialBlock) -> bool:
    """Both blocks are the two arms of one ``eval variants --sequential`` run: same design, same stops."""
    stops = [[(s.task_id, s.reason, s.direction, s.statistic) for s in x.tasks] for x in (b, c)]
    return b.plan.kind == "two-arm" and b.plan == c.plan and stops[0] == stops[1]


SEQUENTIAL_MARKS: Final = ("both reports are arms of one sequential run", "stopped sequentially (")
"""Words only ``sequential_warnings`` writes: a comparison that says one of them has fixed-k verdicts that
peek (``alisio.core.lab.outputs.view_compare.context_line`` then counts no verdict of its own)."""


def sequential_warnings(baseline: Report, candidate: Report) -> list[str]:
    """What ``eval compare`` says of sequential reports: their verdicts peek, and the sequential decisions
    (both arms of one ``eval variants --sequential`` run: its per-task decisions, which are the valid ones)."""
    b, c = baseline.sequential, candidate.sequential
    if b is None and c is None:
        return []
    if b is not None and c is not None and _same_run(b, c):
        return [
            "both reports are arms of one sequential run (runs per task differ by design): the fixed-k "
            "verdicts below do not hold under its stopping; its sequential decisions, valid under it, are: "
            + _decisions(c)
        ]
    out = []
    for side, block in (("baseline", b), ("candidate", c)):
        if block is not None:
            out.append(
                f"the {side} stopped sequentially ({describe_plan(block.plan)}): its tasks ran until their "
                "sequential test stopped, so the fixed-k verdicts below are not valid under that stopping; "
                f"its own decisions: {_decisions(block)}"
            )
    return out
