"""JUnit XML of lab results (``--junit FILE`` on ``eval run``, ``eval ci`` and ``eval variants``), for the test
reports of GitHub (through a JUnit action), GitLab and Jenkins.

Rules this module keeps:

- One ``<testsuites>`` root; a ``<testsuite>`` per suite (per variant for ``eval variants``, per replayed
  suite for ``eval ci``) with its conditions as ``<properties>``; a ``<testcase>`` per task.
- A task's testcase carries at most one child besides ``<system-out>``, the shape every reader accepts: an
  ``<error>`` when some of its runs ended error (infrastructure: the task cannot be judged cleanly, and
  the error lists the failing runs too), else a ``<failure>`` when its success rate is below 100%, with each
  run that did not pass, its failing verifiers and the first lines of their details, the runs with the same
  message once (``alisio.core.lab.outputs.failing``, as report.md lists them). ``<system-out>`` holds its
  rate. The properties name the agent (and the script) as every report does (``alisio.core.lab.reports.naming``).
- An interrupted report adds an ``(interrupted)`` testcase in error: tasks that never ran are missing; a report
  a cap stopped (``--max-cost-usd``) adds a skipped one instead: its runs not started are not run, not failed. A
  suite ``eval ci`` skipped (no cassettes) is one skipped testcase; a suite it could not replay, one error.
- Counts add up: a testsuite's ``tests``, ``failures``, ``errors`` and ``skipped`` count its testcases, the
  root's sum its testsuites'. ``time`` is the runs' wall time in seconds; ``timestamp`` is the run's start
  (UTC, ``YYYY-MM-DDTHH:MM:SS``).
- Text from runs is untrusted: redacted (``alisio.core.share.secrets.redact``), control characters shown as
  escapes (XML 1.0 forbids them), and escaped by the XML serializer.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from alisio.core.base import Frozen
from alisio.core.lab.outputs.failing import FailureGroup, failing_runs, group_failures
from alisio.core.lab.outputs.formats import format_rate, visible_controls
from alisio.core.lab.reports.naming import mode_text, run_naming
from alisio.core.lab.reports.report import Conditions, Report, TaskReport, finished_runs
from alisio.core.lab.runs.records import RunRecord
from alisio.core.share.secrets import redact
from alisio.core.text import plural

__all__ = ["BrokenSuite", "JUnitSuite", "ReportSuite", "SkippedSuite", "junit_xml"]


class ReportSuite(Frozen, frozen=True, kw_only=True):
    """A suite that ran: its report and records."""

    name: str
    """``calc-suite``, or ``calc-suite/early-compaction`` for a variant."""
    report: Report
    records: tuple[RunRecord, ...]
    variant: str | None = None
    show_as: str | None = None
    """What the failing runs' ``eval show`` commands are given: the run id (default) or the report's directory."""


class SkippedSuite(Frozen, frozen=True, kw_only=True):
    """A suite ``eval ci`` skipped (no cassettes), and why."""

    name: str
    message: str


class BrokenSuite(Frozen, frozen=True, kw_only=True):
    """A suite ``eval ci`` could not replay, and the problems."""

    name: str
    problems: tuple[str, ...]


JUnitSuite = ReportSuite | SkippedSuite | BrokenSuite


def _text(text: str, known: tuple[tuple[str, str], ...]) -> str:
    return visible_controls(redact(text, known))


def _pass_k(observed: bool | None, estimate: float | None) -> str:
    if observed is not None:
        return "yes" if observed else "no"
    return "n/a" if estimate is None else f"{estimate:.2f} (est.)"


def _rate_line(t: TaskReport, k: int) -> str:
    """``3/5 judged runs passed: 60.0% [23.1%, 88.2%]; pass@5 yes, pass^5 no; 1 error``."""
    errored = f"; {t.errored} error (excluded from every rate)" if t.errored else ""
    return (
        f"{t.passes}/{t.judged} judged runs passed: {format_rate(t.success_rate, t.interval)}; "
        f"pass@{k} {_pass_k(t.pass_at_k, t.pass_at_k_estimate)}, "
        f"pass^{k} {_pass_k(t.pass_hat_k, t.pass_hat_k_estimate)}{errored}"
    )


def _run_lines(group: FailureGroup) -> list[str]:
    run = group.first
    reps = ", ".join(str(r.repetition) for r in group.runs)
    lines = [f"rep{'s' if len(group.runs) > 1 else ''} {reps}: {run.label}"]
    for v in run.verifiers:
        lines.append(f"  {v.id} ({v.kind}): {v.status}")
        lines += [f"    {line}" for line in v.detail]
        if v.more_lines:
            lines.append(f"    (+{v.more_lines} more lines)")
    if run.divergence is not None:
        lines.append(f"  diverged from the cassette at {run.divergence}")
        lines += [f"    {line}" for line in run.divergence_lines]
    lines += [f"  error: {e}" for e in run.errors]
    lines.append(f"  open {'it' if len(group.runs) == 1 else 'the first'}: {run.show}")
    return lines


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.3f}"


def _capped_case(report: Report, classname: str, known: tuple[tuple[str, str], ...]) -> ET.Element:
    """A skipped ``(stopped by --max-cost-usd)`` testcase: the runs the cap left not started are not run."""
    message = f"stopped by {report.capped} after {finished_runs(report)}: the runs not started are not run"
    if report.stopped:
        message += f" ({report.stopped})"
    name = f"(stopped by {report.capped})"
    case = ET.Element("testcase", {"name": name, "classname": classname, "time": "0.000"})
    ET.SubElement(case, "skipped", {"message": _text(message, known)})
    return case


def _task_case(
    suite: ReportSuite, t: TaskReport, mine: Sequence[RunRecord], known: tuple[tuple[str, str], ...]
) -> tuple[ET.Element, str | None]:
    """The testcase of one task, and ``failure``/``error`` when it is one."""
    c = suite.report.conditions
    case = ET.Element(
        "testcase",
        {
            "name": _text(t.task_id, known),
            "classname": _text(suite.name, known),
            "time": _seconds(sum(r.measured.wall_ms for r in mine)),
        },
    )
    rate = _rate_line(t, c.k)
    runs, _ = failing_runs(mine, suite.show_as or c.run_id, known)
    body = "\n".join(line for group in group_failures(runs) for line in _run_lines(group))
    kind: str | None = None
    if t.errored:
        kind = "error"
        reasons = ", ".join(f"{r.name} {r.count}" for r in t.error_reasons)
        message = f"{t.errored} of {plural(t.runs, 'run')} ended error (infrastructure; excluded from every rate): {reasons}"
        ET.SubElement(case, "error", {"message": _text(message, known), "type": "error"}).text = _text(
            body, known
        )
    elif t.success_rate is None or t.passes < t.judged:
        kind = "failure"
        ET.SubElement(case, "failure", {"message": _text(rate, known), "type": "not_passed"}).text = _text(
            body, known
        )
    ET.SubElement(case, "system-out").text = _text(rate, known)
    return case, kind


def _properties(c: Conditions, variant: str | None) -> ET.Element:
    values = [
        ("suiteId", c.suite_id),
        ("suiteVersion", c.suite_version),
        ("suiteHash", c.suite_hash),
        ("harnessVersion", c.harness_version),
        ("configHash", c.config_hash),
        ("provider", c.provider),
        ("model", c.model),
        *((("endpoint", c.endpoint),) if c.endpoint is not None else ()),
        *((named.key, named.value) for named in run_naming(c) if named.present),
        ("mode", mode_text(c)),
        ("k", str(c.k)),
        ("seed", str(c.seed)),
        ("sandbox", c.sandbox),
        ("runId", c.run_id),
        ("createdAt", c.created_at),
        *((("variant", variant),) if variant is not None else ()),
    ]
    properties = ET.Element("properties")
    for name, value in values:
        ET.SubElement(properties, "property", {"name": name, "value": visible_controls(value)})
    return properties


def _suite(suite: JUnitSuite, known: tuple[tuple[str, str], ...]) -> tuple[ET.Element, dict[str, int], int]:
    """The testsuite element, its counts, and its wall time in milliseconds."""
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    element = ET.Element("testsuite", {"name": _text(suite.name, known)})
    wall = 0
    cases: list[ET.Element] = []
    match suite:
        case ReportSuite():
            c = suite.report.conditions
            element.set("timestamp", c.created_at[:19])
            element.append(_properties(c, suite.variant))
            for t in suite.report.tasks:
                mine = [r for r in suite.records if r.task_id == t.task_id]
                wall += sum(r.measured.wall_ms for r in mine)
                case, kind = _task_case(suite, t, mine, known)
                cases.append(case)
                if kind is not None:
                    counts["errors" if kind == "error" else "failures"] += 1
            if suite.report.capped is not None:
                cases.append(_capped_case(suite.report, _text(suite.name, known), known))
                counts["skipped"] += 1
            elif suite.report.interrupted:
                why = f" ({suite.report.stopped})" if suite.report.stopped else ""
                message = (
                    f"interrupted after {finished_runs(suite.report)}{why}: tasks that never ran are missing"
                )
                case = ET.Element(
                    "testcase",
                    {"name": "(interrupted)", "classname": _text(suite.name, known), "time": "0.000"},
                )
                ET.SubElement(case, "error", {"message": _text(message, known), "type": "interrupted"})
                cases.append(case)
                counts["errors"] += 1
        case SkippedSuite():
            case = ET.Element(
                "testcase", {"name": "cassettes", "classname": _text(suite.name, known), "time": "0.000"}
            )
            ET.SubElement(case, "skipped", {"message": _text(suite.message, known)})
            cases.append(case)
            counts["skipped"] += 1
        case BrokenSuite():
            case = ET.Element(
                "testcase", {"name": "replay", "classname": _text(suite.name, known), "time": "0.000"}
            )
            first = suite.problems[0] if suite.problems else "the suite could not be replayed"
            error = ET.SubElement(case, "error", {"message": _text(first, known), "type": "error"})
            error.text = _text("\n".join(suite.problems), known)
            cases.append(case)
            counts["errors"] += 1
    counts["tests"] = len(cases)
    for name, value in counts.items():
        element.set(name, str(value))
    element.set("time", _seconds(wall))
    element.extend(cases)
    return element, counts, wall


def junit_xml(suites: Sequence[JUnitSuite], known: tuple[tuple[str, str], ...] = ()) -> str:
    """The JUnit XML document of ``suites`` (UTF-8 text with its declaration, ending with a newline).

    Args:
        suites: the suites in the order they ran.
        known: exact credentials to redact from every text (``alisio.core.share.secrets``).
    """
    root = ET.Element("testsuites", {"name": "alisio eval"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    wall = 0
    for suite in suites:
        element, counts, ms = _suite(suite, known)
        root.append(element)
        wall += ms
        for name, value in counts.items():
            totals[name] += value
    for name, value in totals.items():
        root.set(name, str(value))
    root.set("time", _seconds(wall))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
