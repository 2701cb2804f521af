"""The parts every alisio HTML page is made of: escaping, the page shell and its CSS, tables, status colours,
the forest plot's SVG and anchors.

Rules this module keeps:

- A page is one self-contained file: inline CSS and inline SVG, at most one inline script (report.html's
  filter), no font, image or stylesheet from anywhere. Its Content-Security-Policy says so to the browser
  (``default-src 'none'``, the script allowed by its sha256 only), so even a mistake elsewhere could not
  make it load anything or run any other script.
- Every string that reaches the page goes through ``esc`` (text) or ``attr`` (attribute values): task
  prompts, tool output and verifier details are untrusted text and are shown, never interpreted. Control
  characters are shown as escapes (``\\x1b``).
- A rate is drawn on a 0-100% axis: a point for the success rate, a bar for its 95% interval (none in
  replay, where there is no interval), the same geometry in every plot so rows line up.
- A status has one colour and one letter everywhere (pass P, fail F, budget_exceeded B, error E, not run
  ·), so the grid reads without colour too.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from alisio.core.base import Frozen
from alisio.core.lab.outputs.formats import visible_controls
from alisio.core.lab.outputs.view import Condition, Notice, Table
from alisio.core.lab.runs.records import RunStatus
from alisio.core.stats.rates import Interval

__all__ = [
    "PLOT_WIDTH",
    "STATUS_LETTER",
    "Bar",
    "anchor",
    "attr",
    "axis_svg",
    "conditions_html",
    "esc",
    "forest_svg",
    "legend_html",
    "notices_html",
    "page",
    "paragraphs_html",
    "status_class",
    "table_html",
]

PLOT_WIDTH = 240
"""Width of a forest plot cell in pixels; the axis runs from ``_PAD`` to ``PLOT_WIDTH - _PAD``."""
_PAD = 10
_ROW = 14
"""Height of one bar's lane."""

STATUS_LETTER = {
    RunStatus.PASS: "P",
    RunStatus.FAIL: "F",
    RunStatus.BUDGET_EXCEEDED: "B",
    RunStatus.ERROR: "E",
}


def esc(text: str) -> str:
    """``text`` as HTML text: ``&``, ``<`` and ``>`` escaped, control characters shown as escapes."""
    return html.escape(visible_controls(text), quote=False)


def attr(text: str) -> str:
    """``text`` as a double-quoted attribute value (quotes escaped too)."""
    return html.escape(visible_controls(text), quote=True)


_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


def _id_part(text: str) -> str:
    """``text`` with every character outside ``[A-Za-z0-9_.-]`` written ``~hex~``: injective, URL-safe."""
    return _UNSAFE_ID.sub(lambda m: f"~{ord(m.group()):x}~", text)


def anchor(task_id: str, repetition: int) -> str:
    """The id of a run's transcript in its report page: ``run-<task>-<repetition>``."""
    return f"run-{_id_part(task_id)}-{repetition}"


def status_class(status: RunStatus | None) -> str:
    """The CSS class of a status: ``s-pass``, ``s-fail``, ``s-budget_exceeded``, ``s-error``, ``s-none``."""
    return f"s-{status}" if status is not None else "s-none"


_CSS = """
:root{--pass:#1a7f37;--fail:#cf222e;--budget:#bf8700;--error:#8250df;--none:#d0d7de;--ink:#1f2328;
--muted:#59636e;--line:#d1d9e0;--base:#6e7781;--cand:#0969da;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);
margin:0 auto;max-width:1280px;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 12px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
pre{background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:6px 8px;margin:4px 0;
white-space:pre-wrap;overflow-wrap:anywhere;max-height:420px;overflow:auto}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid var(--line);padding:3px 7px;
text-align:left;vertical-align:middle}th{background:var(--bg);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.total td{font-weight:600}
.notice{border-left:4px solid var(--budget);background:#fff8c5;padding:6px 10px;margin:6px 0}
.notice.strong{border-color:var(--fail);background:#ffebe9;font-weight:600}
.note{color:var(--muted);font-size:13px;max-width:70em}
.divergence{border-left:4px solid var(--fail);padding:4px 10px;margin:6px 0;font-size:13px;overflow-wrap:anywhere}
p.answer{font-size:17px;font-weight:600;margin:4px 0 10px;max-width:70em}
dl.conditions{display:grid;grid-template-columns:max-content 1fr max-content 1fr;gap:2px 12px;margin:6px 0}
dl.conditions dt{color:var(--muted)}dl.conditions dd{margin:0;overflow-wrap:anywhere}
table.forest td.plot{padding:0 4px}table.forest td.nw{white-space:nowrap}table.forest{font-size:13px}table.forest th,table.forest td{padding:3px 5px}svg.forest,svg.axis{display:block}
svg .grid{stroke:#e6e9ed;stroke-width:1}svg .mid{stroke:#c8d0d8}svg .tick{fill:var(--muted);font-size:10px}
svg .ci{stroke-width:3;stroke-linecap:round}svg .cap{stroke-width:1.5}
svg .baseline{stroke:var(--base);fill:var(--base)}svg .candidate{stroke:var(--cand);fill:var(--cand)}
svg .arm{stroke:var(--ink);fill:var(--ink)}
.badge{display:inline-block;padding:0 6px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;
background:var(--muted);white-space:nowrap}.badge.improved{background:var(--pass)}
.badge.regressed{background:var(--fail)}.badge.inconclusive{background:#8c959f}
.badge.changed{background:var(--budget)}
table.grid td{border:0;padding:1px}table.grid th{border:0;background:none;font-weight:normal;
color:var(--muted);font-size:12px;padding:1px 4px}table.grid td.task{padding-right:10px;font-size:13px}
table.grid td.sep{width:6px}
a.cell,span.cell{display:block;width:22px;height:22px;line-height:22px;text-align:center;border-radius:3px;
color:#fff;font:600 11px/22px ui-monospace,monospace;text-decoration:none}
.cell.s-pass,.swatch.s-pass{background:var(--pass)}.cell.s-fail,.swatch.s-fail{background:var(--fail)}
.cell.s-budget_exceeded,.swatch.s-budget_exceeded{background:var(--budget)}
.cell.s-error,.swatch.s-error{background:var(--error)}.cell.s-none,.swatch.s-none{background:var(--none);color:var(--muted)}
span.swatch.base{background:var(--base)}span.swatch.cand{background:var(--cand)}
tr.differs td{background:#fff8c5}table.conditions th{text-align:left;font-weight:normal;color:var(--muted)}
span.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:4px}
.legend span.item{margin-right:14px;font-size:13px}
details.run{border:1px solid var(--line);border-left-width:5px;border-radius:4px;margin:4px 0}
details.run.s-pass{border-left-color:var(--pass)}details.run.s-fail{border-left-color:var(--fail)}
details.run.s-budget_exceeded{border-left-color:var(--budget)}details.run.s-error{border-left-color:var(--error)}
details.run>summary{cursor:pointer;padding:4px 8px;list-style-position:inside}
details.run[open]>summary{border-bottom:1px solid var(--line);background:var(--bg)}
details.run .body{padding:4px 10px 8px}ol.events{padding-left:0;list-style:none;margin:6px 0}
ol.events li{margin:6px 0 6px;padding-left:8px;border-left:3px solid var(--line)}
ol.events li.assistant{border-color:var(--cand)}ol.events li.call{border-color:var(--base)}
ol.events li.result.ok{border-color:var(--pass)}ol.events li.result.failed{border-color:var(--fail)}
ol.events li.incident,ol.events li.budget{border-color:var(--budget)}ol.events li.end{border-color:var(--ink)}
.ev-title{font-size:12px;color:var(--muted)}.ev-title b{color:var(--ink)}
.cut{color:var(--budget);font-size:12px}
pre.diff span.add{background:#dafbe1;color:#116329}pre.diff span.del{background:#ffebe9;color:#82071e}
pre.diff span.hunk{color:var(--cand)}
ul.failing{padding-left:18px}ul.failing li{margin:8px 0}
form.filters{margin:8px 0 16px}form.filters label{margin-right:12px}table.groups td{vertical-align:top}
:target{outline:2px solid var(--cand);outline-offset:2px}
footer{margin-top:32px;color:var(--muted);font-size:12px}
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def page(title: str, body: str, script: tuple[str, str] | None = None) -> str:
    """A whole self-contained HTML page (UTF-8, nothing loaded from anywhere).

    ``script`` is (the inline script, its CSP source ``'sha256-...'``): the one script the page may run,
    placed at the end of the body; without it the CSP allows no script at all.
    """
    csp = _CSP if script is None else f"{_CSP}; script-src {script[1]}"
    tail = "" if script is None else f"\n<script>{script[0]}</script>"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>\n{body}{tail}\n</body></html>\n"
    )


def notices_html(notices: Sequence[Notice]) -> str:
    return "".join(f'<p class="notice{" strong" if n.strong else ""}">{esc(n.text)}</p>' for n in notices)


def conditions_html(conditions: Sequence[Condition]) -> str:
    """The conditions as a compact two-column definition list (hashes as code)."""
    items = []
    for c in conditions:
        value = f"<code>{esc(c.value)}</code>" if c.code else esc(c.value)
        items.append(f"<dt>{esc(c.name)}</dt><dd>{value}</dd>")
    return f'<dl class="conditions" id="conditions">{"".join(items)}</dl>'


_NUMERIC = re.compile(r"[-+]?[\d,.]+( s| s²| pp)?")


def _cell(text: str) -> str:
    cls = ' class="num"' if _NUMERIC.fullmatch(text) else ""
    return f"<td{cls}>{esc(text)}</td>"


def table_html(table: Table, cls: str = "") -> str:
    """A view ``Table`` as an HTML table (its total row, if any, marked)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in table.header)
    rows = []
    for index, row in enumerate(table.rows):
        total = ' class="total"' if table.total and index == len(table.rows) - 1 else ""
        rows.append(f"<tr{total}>{''.join(_cell(c) for c in row)}</tr>")
    class_attr = f' class="{attr(cls)}"' if cls else ""
    return f"<table{class_attr}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def paragraphs_html(lines: Sequence[str], cls: str = "") -> str:
    """Lines as paragraphs (an empty line separates them); lines starting with ``- `` as a list."""
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []
    class_attr = f' class="{attr(cls)}"' if cls else ""

    def flush() -> None:
        if para:
            out.append(f"<p{class_attr}>{esc(' '.join(para))}</p>")
            para.clear()
        if items:
            out.append(f"<ul{class_attr}>{''.join(f'<li>{esc(i)}</li>' for i in items)}</ul>")
            items.clear()

    for line in lines:
        if not line:
            flush()
        elif line.startswith("- "):
            if para:
                flush()
            items.append(line[2:])
        else:
            if items:
                flush()
            para.append(line)
    flush()
    return "".join(out)


def legend_html() -> str:
    names = (
        (RunStatus.PASS, "pass"),
        (RunStatus.FAIL, "fail"),
        (RunStatus.BUDGET_EXCEEDED, "budget_exceeded"),
        (RunStatus.ERROR, "error (not judged)"),
    )
    items = [
        f'<span class="item"><span class="swatch {status_class(s)}"></span>{STATUS_LETTER[s]} {esc(n)}</span>'
        for s, n in names
    ]
    items.append(f'<span class="item"><span class="swatch {status_class(None)}"></span>· no record</span>')
    return f'<p class="legend">{"".join(items)}</p>'


# --- the forest plot -----------------------------------------------------------------------------------------


class Bar(Frozen, frozen=True, kw_only=True):
    """One rate on the axis: its point and, when there is one, its 95% interval; ``cls`` colours it."""

    rate: float | None
    interval: Interval | None = None
    cls: str = "arm"
    label: str = ""
    """What the bar says in words (its tooltip and the plot's accessible name)."""


def _x(value: float) -> float:
    return round(_PAD + min(1.0, max(0.0, value)) * (PLOT_WIDTH - 2 * _PAD), 1)


def _grid(height: int) -> str:
    lines = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        cls = "grid mid" if tick == 0.5 else "grid"
        lines.append(f'<line class="{cls}" x1="{_x(tick)}" y1="0" x2="{_x(tick)}" y2="{height}"/>')
    return "".join(lines)


def _bar(bar: Bar, y: float) -> str:
    if bar.rate is None:
        return f'<text class="tick" x="{_x(0.5)}" y="{y + 3.5}" text-anchor="middle">n/a</text>'
    parts = [f"<title>{esc(bar.label)}</title>"]
    if bar.interval is not None:
        lo, hi = _x(bar.interval.low), _x(bar.interval.high)
        parts.append(f'<line class="ci {bar.cls}" x1="{lo}" y1="{y}" x2="{hi}" y2="{y}"/>')
        for end in (lo, hi):
            parts.append(f'<line class="cap {bar.cls}" x1="{end}" y1="{y - 4}" x2="{end}" y2="{y + 4}"/>')
    parts.append(f'<circle class="point {bar.cls}" cx="{_x(bar.rate)}" cy="{y}" r="4.5"/>')
    return f'<g class="bar">{"".join(parts)}</g>'


def forest_svg(bars: Sequence[Bar]) -> str:
    """One row of a forest plot: each bar in its own lane on the shared 0-100% axis."""
    height = _ROW * len(bars) + 8
    drawn = "".join(_bar(bar, 4 + _ROW * i + _ROW / 2) for i, bar in enumerate(bars))
    label = "; ".join(bar.label for bar in bars)
    return (
        f'<svg class="forest" xmlns="http://www.w3.org/2000/svg" width="{PLOT_WIDTH}" height="{height}" '
        f'viewBox="0 0 {PLOT_WIDTH} {height}" role="img" aria-label="{attr(label)}">'
        f"{_grid(height)}{drawn}</svg>"
    )


def axis_svg() -> str:
    """The axis of the forest plot's header: 0%, 25%, 50%, 75%, 100%."""
    anchors = {0.0: "start", 1.0: "end"}
    ticks = "".join(
        f'<text class="tick" x="{_x(t)}" y="12" text-anchor="{anchors.get(t, "middle")}">{int(t * 100)}%</text>'
        for t in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    return (
        f'<svg class="axis" xmlns="http://www.w3.org/2000/svg" width="{PLOT_WIDTH}" height="16" '
        f'viewBox="0 0 {PLOT_WIDTH} 16" aria-hidden="true">{ticks}</svg>'
    )
