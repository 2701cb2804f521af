"""``--dry-run`` of ``eval run``, ``eval variants`` and ``eval record``: the plan and what it would spend, with
nothing run, written or spent.

Everything a real command checks before its first run is checked (the suite, the tasks and their grants,
the configuration, the provider, the variants, a ``--plan`` file, the shard), then the command prints:

- the plan: the suite, tasks x k (x variants) = runs, the provider and model, the seed;
- the shard, when ``--shard I/N``: its runs of the plan's, and how the plan was cut;
- with ``--reuse RUN|DIR``: how many runs would be reused from it (a mismatch named, as the real command
  names it), and how many would run;
- for each arm, an estimate of the tokens, the cost (when the model has prices) and the wall time, from the
  stored runs of the same suite, model and mode (``alisio.core.lab.plans.estimate``); ``no past runs to estimate
  from`` when there are none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import msgspec
from returns.result import Success

from alisio.core.lab.plans.estimate import estimate, estimate_lines
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.text import plural
from alisio.shell.errors import CommandError
from alisio.shell.lab.model import LabStart, Ui
from alisio.shell.lab.prepare import Preview, preview_request
from alisio.shell.lab.request import LabMode, LabRequest
from alisio.shell.lab.reuse import reusable, reuse_source
from alisio.shell.lab.store import RUNS_JSONL, read_runs
from alisio.shell.lab.stored import stored_runs

__all__ = ["PAST_REPORTS", "dry_run"]

PAST_REPORTS = 20
"""The newest stored reports of the same suite and model an estimate reads the runs of."""


def _past(data_root: Path, suite_id: str, model: str, mode: str) -> tuple[list[RunRecord], int]:
    """The records of the newest ``PAST_REPORTS`` stored reports of this suite, model and mode (unreadable
    ones are skipped), each run once (a merged report's and a reusing run's records are copies of others'),
    and how many reports they came from."""
    records: dict[bytes, RunRecord] = {}
    reports = 0
    encoder = msgspec.json.Encoder()
    for run in stored_runs(data_root):
        report = run.report
        if report is None or reports >= PAST_REPORTS:
            continue
        c = report.conditions
        if (c.suite_id, c.model, str(c.mode)) != (suite_id, model, mode):
            continue
        match read_runs(run.directory / RUNS_JSONL):
            case Success(found):
                fresh = {encoder.encode(r): r for r in found if encoder.encode(r) not in records}
                records.update(fresh)
                reports += 1 if fresh else 0
    return list(records.values()), reports


def _headline(start: LabStart, preview: Preview, mode: LabMode) -> list[str]:
    suite = start.choice.loaded.suite
    tasks = plural(len(start.tasks), "task")
    arms = f"{len(start.arms)} variants x " if start.variants is not None else ""
    whole = len(preview.plan)
    what = "record" if mode is LabMode.RECORD else "run"
    lines = [
        f"dry run: would {what} {suite.suite_id} {suite.suite_version}: {arms}{tasks} x k={start.k} = "
        f"{plural(whole, 'run')} ({start.provider.id}, {start.provider.model}, seed {start.seed}); nothing is run"
    ]
    if start.shard is not None and start.owned is not None:
        how = (
            f"balanced by {start.shard.balance_from}"
            if start.shard.weights
            else "each task's repetitions spread"
        )
        lines.append(
            f"shard {start.shard.index} of {start.shard.count}: {plural(len(start.owned), 'run')} of the "
            f"plan's {whole} ({how}); plan {(preview.manifest.digest or '')[:16]}"
        )
    return lines


def _reused(
    request: LabRequest, preview: Preview, todo: tuple[RunSpec, ...], say: Callable[[str], None]
) -> tuple[tuple[RunSpec, ...], list[str]]:
    """What ``--reuse`` would take, and what would run."""
    if request.reuse is None:
        return todo, []
    source = reuse_source(request.reuse, preview.data_root)
    pick = reusable(source, preview.manifest, todo)
    if not pick.sources:
        lines = [f"--reuse {request.reuse}: {line}" for _, why in pick.mismatched for line in why]
        raise CommandError(
            *lines,
            "nothing would be reused: --reuse takes only runs that measured what this command measures",
        )
    for arm, why in pick.mismatched:
        say(f"--reuse {request.reuse}: {f'variant {arm}: ' if arm else ''}nothing reused: {'; '.join(why)}")
    taken = {(r.variant, r.task_id, r.repetition) for r in pick.records}
    left = tuple(s for s in todo if (s.variant, s.task_id, s.repetition) not in taken)
    line = f"reuse: {len(pick.records)} of {len(todo)} runs from {source.run_id}; {plural(len(left), 'run')} would run"
    return left, [line]


def dry_run(request: LabRequest, ui: Ui) -> list[str]:
    """The dry run's lines (module docstring); nothing is run, written or spent.

    Raises:
        CommandError: what the real command would refuse before its first run.
    """
    preview = preview_request(request, ui)
    start = preview.start
    todo = start.owned if start.owned is not None else preview.plan
    lines = _headline(start, preview, request.mode)
    todo, reuse = _reused(request, preview, todo, ui.say)
    lines += reuse
    suite = start.choice.loaded.suite.suite_id
    for arm in start.arms:
        model = arm.model or start.provider.model
        planned = Counter(s.task_id for s in todo if s.variant == arm.variant)
        past, reports = _past(preview.data_root, suite, model, str(start.mode))
        found = estimate(planned, past, reports, arm.rates, start.jobs)
        head = f"variant {arm.variant}: " if arm.variant is not None else ""
        source = f"suite {suite} with model {model} ({start.mode}) in {preview.data_root / 'eval'}"
        text = estimate_lines(found, source, arm.rates is not None, str(start.mode) == "replay")
        lines += [head + text[0], *text[1:]]
    return lines
