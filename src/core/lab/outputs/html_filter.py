"""report.html's filters (by task, status and failing verifier) and its runs that did not pass, grouped by
reason with a count.

Rules this module keeps:

- The page stays self-contained: the filter is one inline script, allowed by its sha256 in the page's
  Content-Security-Policy (``script_source``) and by nothing else, so no other script (a tool's output
  echoing ``<script>``) can run. Without script the filter form stays hidden and the page reads as before.
- The script only shows and hides elements marked ``data-run``, by their ``data-task``, ``data-status`` and
  ``data-failed`` attributes (written through ``attr``); it never writes markup.
- A group is what a reader fixes once: the error or budget reason, or the first verifier that did not
  pass; groups are sorted by count, largest first.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from alisio.core.lab.outputs.html_page import anchor, attr, esc, status_class
from alisio.core.lab.runs.records import RunRecord, RunStatus, VerifierStatus

__all__ = [
    "FILTER_SCRIPT",
    "failure_groups",
    "filter_form_html",
    "groups_html",
    "run_attributes",
    "script_source",
]

FILTER_SCRIPT = """(function () {
  var form = document.getElementById("filters");
  if (!form) { return; }
  form.hidden = false;
  var runs = document.querySelectorAll("[data-run]");
  var count = document.getElementById("filter-count");
  function value(name) { return form.querySelector('select[name="' + name + '"]').value; }
  function apply() {
    var task = value("task"), status = value("status"), verifier = value("verifier");
    var shown = 0, total = 0;
    runs.forEach(function (el) {
      var failed = " " + el.getAttribute("data-failed") + " ";
      var ok = (!task || el.getAttribute("data-task") === task) &&
        (!status || el.getAttribute("data-status") === status) &&
        (!verifier || failed.indexOf(" " + verifier + " ") >= 0);
      el.hidden = !ok;
      if (el.tagName === "DETAILS") { total += 1; if (ok) { shown += 1; } }
    });
    count.textContent = shown + " of " + total + " runs shown";
  }
  form.addEventListener("change", apply);
  apply();
})();"""


def script_source(script: str) -> str:
    """The CSP source that allows exactly ``script`` inline: ``'sha256-<base64>'``."""
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return f"'sha256-{digest}'"


def _failed(record: RunRecord) -> list[str]:
    return [v.id for v in record.verifiers if v.status is not VerifierStatus.PASS]


def run_attributes(record: RunRecord) -> str:
    """The attributes the filter reads on a run's element (its transcript, its entry in the failing list)."""
    return (
        f' data-run="" data-task="{attr(record.task_id)}" data-status="{attr(str(record.status))}"'
        f' data-failed="{attr(" ".join(_failed(record)))}"'
    )


def _options(name: str, label: str, values: Sequence[str]) -> str:
    options = "".join(f'<option value="{attr(v)}">{esc(v)}</option>' for v in values)
    return (
        f'<label>{esc(label)} <select name="{name}"><option value="">all</option>{options}</select></label>'
    )


def filter_form_html(records: Sequence[RunRecord]) -> str:
    """The filter form (hidden until the script shows it): task, status, and a verifier that did not pass."""
    tasks = sorted({r.task_id for r in records})
    statuses = [str(s) for s in RunStatus if any(r.status is s for r in records)]
    verifiers = sorted({v for r in records for v in _failed(r)})
    return (
        '<form id="filters" class="filters" hidden>'
        f"{_options('task', 'task', tasks)} {_options('status', 'status', statuses)} "
        f"{_options('verifier', 'verifier that did not pass', verifiers)} "
        '<span id="filter-count" class="note"></span></form>'
    )


def _reason(record: RunRecord) -> str:
    if record.status is RunStatus.FAIL:
        first = next((v for v in record.verifiers if v.status is not VerifierStatus.PASS), None)
        return (
            f"verifier {first.id} ({first.kind}) did not pass" if first is not None else "no verifier passed"
        )
    return record.reason or "no reason recorded"


def failure_groups(records: Sequence[RunRecord]) -> tuple[tuple[RunStatus, str, tuple[RunRecord, ...]], ...]:
    """The runs that did not pass, grouped by (status, reason), largest group first (then by status and
    reason); each group's runs in task and repetition order."""
    groups: dict[tuple[RunStatus, str], list[RunRecord]] = {}
    for record in sorted(records, key=lambda r: (r.task_id, r.repetition)):
        if record.status is not RunStatus.PASS:
            groups.setdefault((record.status, _reason(record)), []).append(record)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), str(item[0][0]), item[0][1]))
    return tuple((status, reason, tuple(runs)) for (status, reason), runs in ordered)


_LINKS_SHOWN = 20


def groups_html(records: Sequence[RunRecord]) -> str:
    """A table of the failure groups: status, reason, count, and links to the runs' transcripts."""
    groups = failure_groups(records)
    if not groups:
        return ""
    rows = []
    for status, reason, runs in groups:
        links = ", ".join(
            f'<a href="#{anchor(r.task_id, r.repetition)}">{esc(r.task_id)} rep {r.repetition}</a>'
            for r in runs[:_LINKS_SHOWN]
        )
        more = f" and {len(runs) - _LINKS_SHOWN} more" if len(runs) > _LINKS_SHOWN else ""
        rows.append(
            f'<tr><td><span class="swatch {status_class(status)}"></span>{esc(str(status))}</td>'
            f"<td>{esc(reason)}</td><td>{len(runs)}</td><td>{links}{esc(more)}</td></tr>"
        )
    head = "<tr><th>status</th><th>reason</th><th>runs</th><th>which</th></tr>"
    return f'<table class="groups" id="groups"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
