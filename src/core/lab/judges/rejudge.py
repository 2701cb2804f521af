"""Judging a report's runs again without the model (``alisio eval rejudge``): each run's new record, what
changed, and the report's conditions.

The shell applies each run's kept workspace diff to a fresh copy of the suite's (possibly changed) fixture,
checks its protected files and runs the (possibly changed) verifiers; the decisions are made here:

- a run is judged again when its agent's loop finished (its transcript ends ``completed`` or
  ``budget_exceeded``) and its workspace was kept: the new record keeps what the run measured (turns, tokens,
  time), its seed, variant and configuration hash, and takes its new status, reason, verifiers and incidents
  (``rejudged_record``);
- a run whose loop ended ``error`` (the provider, the agent, the setup broke) has nothing to judge: it is kept
  as it was, and counted apart (``not_rejudged``);
- a run that cannot be judged again is ``error`` with the reason: ``workspace_not_kept`` (its diff was over
  the cap, or the record predates kept diffs), ``transcript_missing``, ``task_missing`` (the suite has no such
  task any more), ``diff_does_not_apply`` (naming the file and the hunk);
- ``verdict_changes`` lists every run whose status differs; the report's conditions are the old ones with the
  new suite, verifier and fixture hashes, run id and date (``rejudged_conditions``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from alisio.core.lab.outputs.progress import why_not_passed
from alisio.core.lab.reports.report import Conditions, Report
from alisio.core.lab.reports.trust import RejudgeBlock, VerdictChange
from alisio.core.lab.runs.records import RunRecord, RunStatus

__all__ = [
    "DIFF_DOES_NOT_APPLY",
    "TASK_MISSING",
    "TRANSCRIPT_MISSING",
    "WORKSPACE_NOT_KEPT",
    "not_judged_record",
    "rejudge_block",
    "rejudged_conditions",
    "rejudged_record",
    "verdict_changes",
]

WORKSPACE_NOT_KEPT: Final = "workspace_not_kept"
TRANSCRIPT_MISSING: Final = "transcript_missing"
TASK_MISSING: Final = "task_missing"
DIFF_DOES_NOT_APPLY: Final = "diff_does_not_apply"


def rejudged_record(old: RunRecord, judged: RunRecord) -> RunRecord:
    """The run's new record: ``judged``'s status, reason, verifiers, incidents and errors, with what the run
    measured and how it was run kept from ``old``."""
    return msgspec.structs.replace(
        judged,
        seed=old.seed,
        measured=old.measured,
        divergence=old.divergence,
        variant=old.variant,
        config_hash=old.config_hash,
        workspace=old.workspace,
    )


def not_judged_record(old: RunRecord, reason: str, message: str) -> RunRecord:
    """The record of a run that could not be judged again: ``error`` with ``reason`` and ``message``."""
    return msgspec.structs.replace(
        old, status=RunStatus.ERROR, reason=reason, verifiers=(), errors=(message,)
    )


def _key(record: RunRecord) -> tuple[str | None, str, int]:
    return record.variant, record.task_id, record.repetition


def verdict_changes(old: Sequence[RunRecord], new: Sequence[RunRecord]) -> tuple[VerdictChange, ...]:
    """Every run whose status differs between ``old`` and ``new``, in task and repetition order."""
    before = {_key(record): record for record in old}
    changes = [
        VerdictChange(
            task_id=record.task_id,
            repetition=record.repetition,
            variant=record.variant,
            before=str(before[_key(record)].status),
            after=str(record.status),
            reason=record.reason,
            why=why_not_passed(record),
        )
        for record in new
        if _key(record) in before and before[_key(record)].status is not record.status
    ]
    return tuple(sorted(changes, key=lambda c: (c.variant or "", c.task_id, c.repetition)))


def rejudged_conditions(
    old: Conditions,
    *,
    suite_version: str,
    suite_hash: str,
    verifiers_hash: str,
    fixtures_hash: str,
    run_id: str,
    created_at: str,
) -> Conditions:
    """The old conditions with the suite as it is now, and the new report's run id and date."""
    return msgspec.structs.replace(
        old,
        suite_version=suite_version,
        suite_hash=suite_hash,
        verifiers_hash=verifiers_hash,
        fixtures_hash=fixtures_hash,
        run_id=run_id,
        created_at=created_at,
    )


def rejudge_block(
    old: Report,
    old_records: Sequence[RunRecord],
    new_records: Sequence[RunRecord],
    new: Conditions,
    *,
    rejudged: int,
    kept: int,
) -> RejudgeBlock:
    """What the rejudge did (``rejudged``: runs whose diff was applied and judged; ``kept``: runs kept as
    they were, their loop having ended ``error``)."""
    c = old.conditions
    return RejudgeBlock(
        of_run_id=c.run_id,
        of_created_at=c.created_at,
        suite_version_before=c.suite_version,
        suite_version_after=new.suite_version,
        suite_hash_before=c.suite_hash,
        suite_hash_after=new.suite_hash,
        verifiers_hash_before=c.verifiers_hash,
        verifiers_hash_after=new.verifiers_hash or "",
        fixtures_hash_before=c.fixtures_hash,
        fixtures_hash_after=new.fixtures_hash or "",
        runs=len(old_records),
        rejudged=rejudged,
        not_rejudged=kept,
        changed=verdict_changes(old_records, new_records),
    )
