"""``eval compare`` of a report and its rejudge (``eval rejudge``): the same agent runs, judged twice.

A report made by ``eval rejudge`` names the report it judged again (``rejudge.ofRunId``). When one side of a
comparison is the rejudge of the other:

- ``comparable`` pairs them even when the suite's version was bumped in between (the rejudge's conditions name
  the suite as it is now): the rejudged side is compared under the other side's version, and the note names
  both;
- ``with_rejudge_note`` puts first a warning that says so: the runs are the same, so every difference in the
  verdicts comes from the verifiers or the fixtures, not from the agent or the model; it names the hashes
  before and after and how many verdicts changed, and it replaces the warning that the suite content hash
  differs "although suiteVersion matches" (a rejudge changes it on purpose).

Nothing else of the comparison changes: the runs of the two sides are the same runs, so the per-task tests
(which assume independent samples) are conservative here, and the note says the changed verdicts are the
exact answer.
"""

from __future__ import annotations

import msgspec

from alisio.core.lab.comparisons.compare import Comparison
from alisio.core.lab.reports.report import Report
from alisio.core.lab.reports.trust import RejudgeBlock
from alisio.core.text import plural

__all__ = ["comparable", "rejudge_pair", "with_rejudge_note"]

_HASH_WARNING = "suite content hash differs although suiteVersion"


def rejudge_pair(baseline: Report, candidate: Report) -> tuple[RejudgeBlock, str] | None:
    """The rejudge block and which side it is (``candidate``, ``baseline``) when one side is the rejudge of
    the other; else ``None``."""
    for side, report, other in (("candidate", candidate, baseline), ("baseline", baseline, candidate)):
        block = report.rejudge
        if block is not None and block.of_run_id == other.conditions.run_id:
            return block, side
    return None


def comparable(baseline: Report, candidate: Report) -> tuple[Report, Report]:
    """The two reports as ``compare_reports`` takes them: a rejudge under the other side's suite version."""
    pair = rejudge_pair(baseline, candidate)
    if pair is None:
        return baseline, candidate
    version = (baseline if pair[1] == "candidate" else candidate).conditions.suite_version

    def under(report: Report) -> Report:
        conditions = msgspec.structs.replace(report.conditions, suite_version=version)
        return msgspec.structs.replace(report, conditions=conditions)

    return (baseline, under(candidate)) if pair[1] == "candidate" else (under(baseline), candidate)


def _changed(name: str, before: str | None, after: str) -> str:
    if before is None:
        return f"{name} {after[:12]} (not recorded before)"
    return f"{name} unchanged" if before == after else f"{name} {before[:12]} -> {after[:12]}"


def with_rejudge_note(comparison: Comparison, baseline: Report, candidate: Report) -> Comparison:
    """``comparison`` with the rejudge's note first (module docstring), when one side is the other's rejudge."""
    pair = rejudge_pair(baseline, candidate)
    if pair is None:
        return comparison
    block, side = pair
    other = "baseline" if side == "candidate" else "candidate"
    version = (
        f"suiteVersion {block.suite_version_before} -> {block.suite_version_after}, "
        if block.suite_version_before != block.suite_version_after
        else ""
    )
    note = (
        f"the {side} is a rejudge of the {other} (eval rejudge): the same {plural(block.runs, 'run')} judged "
        f"again without the model, so every difference comes from the suite ({version}"
        f"{_changed('verifiers', block.verifiers_hash_before, block.verifiers_hash_after)}, "
        f"{_changed('fixtures', block.fixtures_hash_before, block.fixtures_hash_after)}), not from the agent; "
        f"{plural(len(block.changed), 'verdict')} changed, which is the exact answer (the per-task tests "
        "treat the two sides as independent samples)"
    )
    kept = tuple(w for w in comparison.warnings if not w.startswith(_HASH_WARNING))
    return msgspec.structs.replace(comparison, warnings=(note, *kept))
