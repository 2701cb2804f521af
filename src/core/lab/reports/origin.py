"""Where a report's runs came from, when not all from one command's own runs: one shard of a plan, a merge of
shards, or runs reused from a stored run (report.json's ``origin``).

Rules this module keeps:

- A shard's report says, before any number, that it is one shard of N and that its figures are partial by
  construction: no verdict is drawn from it (``eval variants`` writes no comparison for a shard).
- A merged report lists the shards it was built from (index, run id, runs) and, for a shard given more
  than once, which output it used (the newest) and which it left out.
- Reused runs are counted and named by the run they came from: ``12 of 40 runs reused from <run id>``.
- Errored runs run again by ``--retry-errors`` are said apart (their earlier records are counted nowhere).
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.base import Frozen

__all__ = ["MergedShard", "ReusedRuns", "RunOrigin", "ShardOf", "origin_lines", "reused_line"]


class ShardOf(Frozen, frozen=True, kw_only=True):
    """A shard's report: which slice of which plan."""

    index: int
    count: int
    planned_runs: int
    """The whole plan's runs (over every shard, and every variant)."""
    digest: str


class MergedShard(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One shard a merged report was built from."""

    index: int
    run_id: str
    created_at: str
    runs: int
    """The records it gave (of this arm, for a variants job)."""
    directory: str
    left_out: tuple[str, ...] = ()
    """Older outputs of the same shard that were given too and not used (their directories): the newest wins."""


class ReusedRuns(Frozen, frozen=True, kw_only=True):
    """Runs taken from a stored run instead of being run again (``--reuse``)."""

    run_id: str
    runs: int


class RunOrigin(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """report.json's ``origin``: absent for a report whose runs all ran in its own command."""

    shard: ShardOf | None = None
    shards: tuple[MergedShard, ...] = ()
    """The shards of a merged report, by index."""
    digest: str | None = None
    """The merged plan's digest."""
    reused: tuple[ReusedRuns, ...] = ()


def reused_line(reused: Sequence[ReusedRuns], planned: int) -> str:
    """``12 of 40 runs reused from <run id>`` (several sources joined)."""
    parts = [f"{r.runs} from {r.run_id}" for r in reused]
    total = sum(r.runs for r in reused)
    if len(parts) == 1:
        return f"{total} of {planned} runs reused {parts[0].replace(f'{total} ', '', 1)}"
    return f"{total} of {planned} runs reused ({', '.join(parts)})"


def origin_lines(
    origin: RunOrigin | None, planned: int | None, retried: int = 0
) -> tuple[tuple[str, bool], ...]:
    """The sentences a report shows first about where its runs came from (a shard, a merge, reused runs, the
    errored runs ``--retry-errors`` ran again), each with whether it is a warning."""
    out: list[tuple[str, bool]] = []
    if origin is not None:
        out += _origin(origin, planned)
    if retried:
        runs = "run was" if retried == 1 else "runs were"
        out.append(
            (
                f"{retried} errored {runs} run again (--retry-errors): the earlier records are kept in "
                "retried/runs.jsonl and counted nowhere.",
                False,
            )
        )
    return tuple(out)


def _origin(origin: RunOrigin, planned: int | None) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    if origin.shard is not None:
        s = origin.shard
        out.append(
            (
                f"Shard {s.index} of {s.count} of a plan of {s.planned_runs} runs (plan {s.digest[:16]}): its "
                "figures cover this shard's runs only, partial by construction, and it draws no verdict. "
                "Merge the shards with alisio eval merge.",
                True,
            )
        )
    if origin.shards:
        listed = ", ".join(f"{m.index} ({m.run_id}, {m.runs} runs)" for m in origin.shards)
        digest = f" of plan {origin.digest[:16]}" if origin.digest else ""
        out.append((f"Merged from {len(origin.shards)} shards{digest}: {listed}.", False))
        for m in origin.shards:
            if m.left_out:
                older = ", ".join(m.left_out)
                out.append(
                    (
                        f"Shard {m.index} was given more than once: the newest ({m.directory}) is used, not {older}.",
                        False,
                    )
                )
    if origin.reused:
        out.append((reused_line(origin.reused, planned or 0) + ", not run again.", False))
    return out
