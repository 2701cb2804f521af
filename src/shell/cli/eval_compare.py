"""``alisio eval compare BASELINE CANDIDATE [--verdict disjoint|exact] [--adjust holm|bh]
[--format summary|md] [--json] [--html FILE] [--fail-on regressed|inconclusive|worse-than:M]``: compare two reports of the
same suite.

Each side is a run id (``latest``, or any unique prefix; ``alisio.shell.lab.stored``), a report directory,
its report.json, or an ``eval export`` bundle (``alisio.shell.lab.sources``).

- stdout: on a terminal a short summary (a verdict per task, the outcome counts, the gate, and where the
  full comparison.md was written: ``<dataDir>/comparisons/``); otherwise, or with ``--format md``,
  comparison.md's Markdown; with ``--json`` the comparison; ``--html FILE`` also writes the
  comparison as one self-contained page (comparison.html: links to both report.html and, per task, to a
  run's transcript on each side; both sides' intervals per task on one axis, the verdicts, the suite summary
  and the limits).
- ``--fail-on worse-than:M`` exits 4 unless every task with a verdict is shown at most M worse
  (``alisio.core.stats.noninferiority``).
- ``--fail-on regressed`` exits 4 when a task regressed; ``--fail-on inconclusive`` when a task regressed
  or is inconclusive. Tasks without a verdict (low power, not comparable, one side only, replay) are not
  gated: stderr says how many.
- With ``$GITHUB_STEP_SUMMARY`` set, the verdict table (and the gate) is appended to that file.

Exit codes: 0 compared (whatever the verdicts, unless a gate was hit); 1 unreadable input, an invalid flag
value (one line naming the file or the flag and what is wrong) or an output that cannot be written;
3 incompatible suites (different suiteId or suiteVersion); 4 the ``--fail-on`` gate was hit.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from alisio.core.lab.comparisons.compare import Comparison
    from alisio.core.lab.comparisons.gate import FailOn, GateResult
    from alisio.core.lab.outputs.render_html_compare import SideLinks
    from alisio.core.lab.reports.report import Report
    from alisio.core.lab.trajectories.contrast import TaskDivergence

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.foreign_flags import PassThreshold, Scorer
from alisio.shell.cli.options import Json

_SIDE = (
    "report: a run id (latest, or a unique prefix), a report directory, its report.json, an eval export bundle, "
    "an Inspect AI log (.eval or .json) or a Harbor job directory."
)
Baseline = Annotated[
    str, typer.Argument(help=f"The baseline {_SIDE}", metavar="BASELINE", show_default=False)
]
Candidate = Annotated[
    str, typer.Argument(help=f"The candidate {_SIDE}", metavar="CANDIDATE", show_default=False)
]
VerdictFlag = Annotated[
    str,
    typer.Option(
        "--verdict",
        metavar="RULE",
        help="disjoint: disjoint 95% Wilson intervals (the spec's conservative screen); exact: the "
        "adjusted Boschloo exact p-value below 0.05.",
    ),
]
AdjustFlag = Annotated[
    str,
    typer.Option(
        "--adjust",
        metavar="METHOD",
        help="Adjustment of the per-task p-values across tasks: holm (family-wise 5%) or bh "
        "(Benjamini-Hochberg, false discovery rate 5%).",
    ),
]

HtmlFile = Annotated[
    Path | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="Also write the comparison as one self-contained HTML page (replaced if it exists).",
    ),
]
FormatFlag = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar="FORMAT",
        help="summary: a verdict per task, the outcome counts and the gate, the full Markdown written to the "
        "data directory (the default on a terminal); md: comparison.md's Markdown (the default otherwise).",
        show_default=False,
    ),
]
FailOnFlag = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="VERDICT",
        help="Exit 4 when a task's verdict is this or worse: regressed, or inconclusive (regressed and "
        "inconclusive); or worse-than:M (M in (0, 1)) unless every task with a verdict is shown at most M "
        "worse (one-sided exact test per task, adjusted across tasks like the p-values).",
        show_default=False,
    ),
]
ExcludeTasks = Annotated[
    Path | None,
    typer.Option(
        "--exclude-tasks",
        metavar="FILE",
        help="Leave out the task ids listed in FILE (one per line; eval stability --quarantine writes it); "
        "the comparison says which.",
        show_default=False,
    ),
]


def _choice(flag: str, value: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; else a ``CommandError`` (one line, exit 1; never click's usage)."""
    from alisio.shell.errors import CommandError

    if value in choices:
        return value
    raise CommandError(f"{flag}: expected {' or '.join(choices)}, got {value!r}")


def _gate_flag(text: str) -> FailOn | float:
    """``--fail-on``: a verdict (``FailOn``) or a non-inferiority margin (``worse-than:M``)."""
    from returns.result import Failure, Success

    from alisio.core.lab.comparisons.gate import PREFIX, FailOn, parse_margin
    from alisio.shell.errors import CommandError

    if not text.startswith(PREFIX):
        return FailOn(_choice("--fail-on", text, (*tuple(FailOn), f"{PREFIX}M")))
    match parse_margin(text):
        case Success(margin):
            return float(margin)
        case Failure(message):
            raise CommandError(str(message))
    raise AssertionError("unreachable")  # pragma: no cover


def _gate(comparison: Comparison, gate_on: FailOn | float) -> GateResult:
    from alisio.core.lab.comparisons.gate import gate, noninferiority_gate

    if isinstance(gate_on, float):
        return noninferiority_gate(comparison, gate_on)
    return gate(comparison, gate_on)


def compare(
    baseline: Baseline,
    candidate: Candidate,
    verdict: VerdictFlag = "disjoint",
    adjust: AdjustFlag = "holm",
    json: Json = False,
    html: HtmlFile = None,
    fail_on: FailOnFlag = None,
    format: FormatFlag = None,
    exclude_tasks: ExcludeTasks = None,
    pass_threshold: PassThreshold = None,
    scorer: Scorer = None,
) -> ExitCode:
    """Compare two reports (run ids, directories, report.json files, export bundles, or results from Inspect AI
    and Harbor): a verdict per task, exact tests, deltas and the limits."""
    import msgspec
    from returns.result import Failure, Success

    from alisio.core.lab.comparisons.compare import compare_reports
    from alisio.core.lab.comparisons.rejudged import comparable, with_rejudge_note
    from alisio.core.lab.outputs.render_compare import render_comparison_markdown
    from alisio.core.stats.verdict import Adjustment, VerdictRule
    from alisio.shell.cli.common import environment
    from alisio.shell.config_home import data_dir
    from alisio.shell.lab.ci_outputs import check_output_file
    from alisio.shell.lab.preflight import NOTHING_WRITTEN

    rule = VerdictRule(_choice("--verdict", verdict, tuple(VerdictRule)))
    adjustment = Adjustment(_choice("--adjust", adjust, tuple(Adjustment)))
    gate_on = None if fail_on is None else _gate_flag(fail_on)
    layout = _choice("--format", format, ("summary", "md")) if format is not None else None
    if html is not None:
        check_output_file(html, "--html", NOTHING_WRITTEN)
    root = data_dir(environment())
    reports = list(comparable(*_sides(root, (baseline, candidate), pass_threshold, scorer)))
    excluded = _excluded(exclude_tasks)
    match compare_reports(*_without(reports, excluded), rule=rule, adjustment=adjustment):
        case Success(comparison):
            summary = not json and (layout == "summary" or (layout is None and sys.stdout.isatty()))
            comparison = _noted(comparison, reports, excluded, exclude_tasks)
            comparison = _shards_noted(comparison, reports)
            comparison = with_rejudge_note(comparison, *reports)  # the same runs, judged again
            tradeoff = _tradeoff(_without(reports, excluded))
            if json:
                sys.stdout.write(msgspec.json.encode(comparison).decode() + "\n")
            elif summary:
                sys.stdout.write(_summary(comparison, gate_on, tradeoff))
            else:
                sys.stdout.write(render_comparison_markdown(comparison) + tradeoff)
            sys.stdout.flush()
            links, divergences = _page_parts(html, baseline, candidate, root)
            return _outputs(
                comparison, html, gate_on, gate_shown=summary, links=links, divergences=divergences
            )
        case Failure(incompatible):
            print(f"alisio eval compare: incompatible reports: {incompatible}", file=sys.stderr)
            return ExitCode.INCOMPATIBLE
    raise AssertionError("unreachable")  # pragma: no cover (the match is exhaustive)


def _sides(root: Path, refs: tuple[str, str], pass_threshold: str | None, scorer: str | None) -> list[Report]:
    """The baseline's and the candidate's reports (a result from another harness judged by the two flags)."""
    from alisio.shell.cli.foreign_flags import refuse_unused, scoring
    from alisio.shell.lab.sources import report_of

    judged = scoring(pass_threshold, scorer)
    reports = [report_of(ref, root, judged) for ref in refs]
    refuse_unused(judged, reports)
    return reports


def _markdown_path(comparison: Comparison) -> Path:
    """Where a terminal summary puts the full comparison.md: ``<dataDir>/comparisons/<baseline>..<candidate>.md``
    (one file per pair of runs, replaced when the pair is compared again)."""
    from alisio.shell.cli.common import environment
    from alisio.shell.config_home import data_dir

    def name(run_id: str) -> str:
        return "".join(ch if ch.isalnum() or ch in "-_." else "+" for ch in run_id)[:100]

    pair = f"{name(comparison.baseline.run_id)}..{name(comparison.candidate.run_id)}.md"
    return data_dir(environment()) / "comparisons" / pair


def _tradeoff(reports: Sequence[Report]) -> str:
    """comparison.md's last section: each side's success rate against its cost per success
    (``alisio.core.lab.comparisons.tradeoff``), or nothing."""
    from alisio.core.lab.comparisons.tradeoff import rate_cost_rows
    from alisio.core.lab.outputs.render_tradeoff import tradeoff_markdown

    lines = tradeoff_markdown(rate_cost_rows(list(zip(("baseline", "candidate"), reports, strict=True))))
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def _summary(comparison: Comparison, gate_on: FailOn | float | None, tradeoff: str = "") -> str:
    """The terminal summary, after writing the full Markdown (with ``tradeoff`` at its end) where it says."""
    from alisio.core.lab.comparisons.gate import describe_gate
    from alisio.core.lab.outputs.render_compare import render_comparison_markdown, render_comparison_summary
    from alisio.shell.lab.ci_outputs import OutputProblem, write_output_file

    target = _markdown_path(comparison)
    full: str | None = str(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_output_file(target, render_comparison_markdown(comparison) + tradeoff, "comparison.md")
    except (OSError, OutputProblem):
        full = None  # the summary says the Markdown was not written; --format md still prints it
    lines = () if gate_on is None else tuple(describe_gate(_gate(comparison, gate_on)))
    return render_comparison_summary(comparison, full=full, gate_lines=lines)


def _page_parts(
    html: Path | None, baseline: str, candidate: str, data_root: Path
) -> tuple[tuple[SideLinks | None, SideLinks | None], tuple[TaskDivergence, ...]]:
    """What ``--html`` links to: each side's report.html and runs, and per task where a passing run of one side
    and a failing run of the other part (none for a bundle, which has no transcripts on disk)."""
    from alisio.shell.lab.sources import report_directory_of
    from alisio.shell.lab.trajectories import comparison_divergences

    if html is None:
        return (None, None), ()
    links = (_links(baseline, data_root, html), _links(candidate, data_root, html))
    sides = [report_directory_of(ref, data_root) for ref in (baseline, candidate)]
    if sides[0] is None or sides[1] is None:
        return links, ()
    return links, comparison_divergences(sides[0], sides[1])


def _links(ref: str, data_root: Path, page: Path) -> SideLinks | None:
    """The links of the side ``ref`` names (none for an export bundle, which has no report directory)."""
    from alisio.shell.lab.sources import report_directory_of

    directory = report_directory_of(ref, data_root)
    return None if directory is None else _side_links(directory, page)


def _side_links(path: Path, page: Path) -> SideLinks | None:
    """Where a side's report.html is from ``page`` (``None`` when it has none), and per task the run whose
    transcript the page links to (from its runs.jsonl, when readable)."""
    import os
    from urllib.parse import quote

    from returns.result import Success

    from alisio.core.lab.outputs.render_html import REPORT_HTML
    from alisio.core.lab.outputs.render_html_compare import SideLinks, linked_run
    from alisio.shell.lab.store import read_runs

    directory = path if path.is_dir() else path.parent
    report = directory / REPORT_HTML
    if not report.is_file():
        return None
    href = quote(os.path.relpath(report.resolve(), page.absolute().parent.resolve()).replace(os.sep, "/"))
    runs: tuple[tuple[str, int, str], ...] = ()
    match read_runs(directory):
        case Success(records):
            picked = [linked_run(records, task) for task in sorted({r.task_id for r in records})]
            runs = tuple((r.task_id, r.repetition, str(r.status)) for r in picked if r is not None)
    return SideLinks(report=href, runs=runs)


def _outputs(
    comparison: Comparison,
    html: Path | None,
    gate_on: FailOn | float | None,
    *,
    gate_shown: bool = False,
    links: tuple[SideLinks | None, SideLinks | None] = (None, None),
    divergences: tuple[TaskDivergence, ...] = (),
) -> ExitCode:
    """The gate (on stderr unless the summary showed it), the ``--html`` page and the step summary; the exit
    code."""
    from alisio.core.lab.comparisons.gate import describe_gate
    from alisio.core.lab.outputs.render_html_compare import render_comparison_html
    from alisio.core.lab.outputs.step_summary import comparison_summary
    from alisio.shell.cli.common import environment, say
    from alisio.shell.cli.outputs import attempt, settle
    from alisio.shell.lab.ci_outputs import append_step_summary, write_output_file

    result = None if gate_on is None else _gate(comparison, gate_on)
    code = ExitCode.GATE if result is not None and result.hit else ExitCode.OK
    for line in [] if result is None or gate_shown else describe_gate(result):
        say(f"alisio eval compare: {line}")

    def write_html(page: Path) -> None:
        write_output_file(page, render_comparison_html(comparison, links, divergences), "--html")
        say(f"comparison: {page}")

    problems: list[str] = []
    if html is not None:
        attempt(problems, lambda: write_html(html))
    attempt(problems, lambda: append_step_summary(environment(), comparison_summary(comparison, result)))
    return settle(code, problems, "alisio eval compare")


def _excluded(path: Path | None) -> frozenset[str]:
    """The task ids listed in ``path`` (blank lines and ``#`` comments skipped); none without a file."""
    from alisio.shell.errors import CommandError

    if path is None:
        return frozenset()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(
            f"--exclude-tasks {path}: cannot read: {getattr(error, 'strerror', None) or error}"
        ) from None
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def _without(reports: list[Report], excluded: frozenset[str]) -> tuple[Report, Report]:
    import msgspec

    kept = [
        msgspec.structs.replace(r, tasks=tuple(t for t in r.tasks if t.task_id not in excluded))
        for r in reports
    ]
    return kept[0], kept[1]


def _shards_noted(comparison: Comparison, reports: list[Report]) -> Comparison:
    """The comparison with a warning for each side that is one shard of a plan (partial by construction)."""
    import msgspec

    notes = [
        f"the {side} is shard {o.shard.index} of {o.shard.count} of its plan: its figures cover a slice of each "
        "task's runs, partial by construction; compare the merged report (alisio eval merge)"
        for side, report in zip(("baseline", "candidate"), reports, strict=True)
        if (o := report.origin) is not None and o.shard is not None
    ]
    return (
        msgspec.structs.replace(comparison, warnings=(*comparison.warnings, *notes)) if notes else comparison
    )


def _noted(
    comparison: Comparison, reports: list[Report], excluded: frozenset[str], path: Path | None
) -> Comparison:
    """The comparison with a warning naming the tasks ``--exclude-tasks`` left out."""
    import msgspec

    left_out = sorted({t.task_id for r in reports for t in r.tasks} & excluded)
    if path is None:
        return comparison
    note = (
        f"{len(left_out)} task{'s' if len(left_out) != 1 else ''} left out by --exclude-tasks {path}: "
        f"{', '.join(left_out) or 'none of its ids is in these reports'} (the suite's token, time and "
        "cost figures still include them)"
    )
    return msgspec.structs.replace(comparison, warnings=(*comparison.warnings, note))
