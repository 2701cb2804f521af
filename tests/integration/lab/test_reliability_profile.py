"""Issue 30's reliability profile through the CLI, against a local stand-in model whose success probability is
set per task (``tests.integration.seq_model``): a pass answers at once (no tool, 110 tokens), a fail reads a
file first (one read_file call, 220 tokens). Every number asserted is recomputed here from the runs the report
holds, by the formulas written out in the test: the one-way ANOVA ICC, the coefficients of variation, the
LCS similarity of the tool sequences, tokens per success."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.integration.helpers import alisio, eval_run, read_report, read_runs, variants
from tests.integration.seq_model import compare_file, seq_suite, stand_in

RATES = {"always": 1.0, "never": 0.0, "half": 0.5, "mostly": 0.8}
K = 8


def _icc(counts: list[tuple[int, int]]) -> float:
    """One-way ANOVA on the 0/1 runs (sums of squares of the expanded runs)."""
    values = [[1.0] * x + [0.0] * (n - x) for x, n in counts]
    flat = [v for group in values for v in group]
    total, tasks = len(flat), len(values)
    grand = sum(flat) / total
    ssb = sum(len(g) * (sum(g) / len(g) - grand) ** 2 for g in values)
    ssw = sum(sum((v - sum(g) / len(g)) ** 2 for v in g) for g in values)
    msb, msw = ssb / (tasks - 1), ssw / (total - tasks)
    n0 = (total - sum(len(g) ** 2 for g in values) / total) / (tasks - 1)
    return (msb - msw) / (msb + (n0 - 1) * msw)


def _cv(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) / mean


def test_a_report_with_k_of_2_or_more_carries_its_reliability_profile(tmp_path: Path) -> None:
    """report.json's reliability: the ICC of the four tasks' pass indicator (recomputed here), the design
    effect, the advice (also under eval run's table), per task the CVs and the tool-call similarity, and the
    tokens per success; report.md and report.html have the section."""
    suite = seq_suite(tmp_path, *RATES)
    server, _ = stand_in({"": RATES})
    out = tmp_path / "out"
    with server:
        result = eval_run(tmp_path, suite, "--base-url", server.base_url, "--model", "m", "--k", str(K),
                          "--jobs", "1", "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = read_report(out)
    profile = report.reliability
    assert profile is not None and profile.icc is not None
    counts = [(t.passes, t.judged) for t in report.tasks]
    assert math.isclose(profile.icc.icc, _icc(counts), rel_tol=1e-9)
    assert math.isclose(profile.icc.design_effect, 1 + (K - 1) * max(profile.icc.icc, 0.0), rel_tol=1e-9)
    assert profile.icc.interval is not None and profile.icc.interval.low <= profile.icc.icc
    assert f"Reliability: {profile.advice}" in result.stderr
    assert profile.advice.startswith("Most of the noise is between tasks (ICC")
    runs = read_runs(out)
    for row in profile.tasks:
        mine = sorted((r for r in runs if r.task_id == row.task_id), key=lambda r: r.repetition)
        tokens = [float((r.measured.input_tokens or 0) + (r.measured.output_tokens or 0)) for r in mine]
        if len(set(tokens)) > 1:
            assert row.tokens_cv is not None and math.isclose(row.tokens_cv, _cv(tokens), rel_tol=1e-9)
        else:
            assert row.tokens_cv == 0.0
        sequences = [r.measured.tool_sequence for r in mine]
        assert set(sequences) <= {(), ("read_file",)}
        alike = sum(a == b for i, a in enumerate(sequences) for b in sequences[i + 1 :])
        pairs = len(sequences) * (len(sequences) - 1) // 2
        assert row.tool_similarity is not None and math.isclose(row.tool_similarity, alike / pairs)
    cost = profile.cost_per_success
    assert cost is not None and cost.tokens is not None and cost.tasks == 4
    spent = sum((r.measured.input_tokens or 0) + (r.measured.output_tokens or 0) for r in runs)
    assert math.isclose(cost.tokens.estimate, spent / sum(t.passes for t in report.tasks))
    markdown = (out / "report.md").read_text()
    assert "## Reliability profile" in markdown and profile.advice in markdown
    assert (
        "| Task | Judged | pass^8 | CV tokens | CV tool calls | CV wall time | Tool-call similarity |"
        in markdown
    )
    assert "Cost per success: " in markdown
    assert "<h2>Reliability profile</h2>" in (out / "report.html").read_text()
    data = json.loads((out / "report.json").read_text())
    assert data["reliability"]["icc"]["designEffect"] == profile.icc.design_effect

    planned = alisio(tmp_path, "eval", "power", "--from", out, "--detect", "0.1", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    measured = plan["measured"]
    rates = [x / n for x, n in counts]
    within = sum(r * (1 - r) * n / (n - 1) for r, (_, n) in zip(rates, counts, strict=True)) / len(counts)
    assert math.isclose(measured["withinVariance"], within) and measured["tasks"] == 4 and measured["k"] == K
    assert math.isclose(plan["baselineRate"], sum(rates) / 4) and plan["tasks"] == 4
    text = alisio(tmp_path, "eval", "power", "--from", out, "--detect", "0.1")
    assert f"Measured in report {report.conditions.run_id} (4 tasks, k={K})" in text.stdout
    assert "Assumed: every task's rate moves by +10.0 pp" in text.stdout


def test_variants_and_compare_end_with_success_rate_against_cost(tmp_path: Path) -> None:
    """Two variants where the candidate passes more at fewer tokens: comparison.json's rateCost and
    comparison.md's table mark it not beaten and the baseline beaten; eval compare of the two reports ends
    with the same table."""
    rates = {"base": {"a": 0.2, "b": 0.5}, "cand": {"a": 0.9, "b": 0.9}}
    suite = seq_suite(tmp_path, "a", "b")
    compare = compare_file(tmp_path / "compare.json", "base", "cand")
    server, _ = stand_in(rates)
    out = tmp_path / "out"
    with server:
        result = variants(tmp_path, suite, compare, "--base-url", server.base_url, "--model", "m", "--k", "6",
                          "--jobs", "1", "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    comparison = json.loads((out / "comparison.json").read_text())
    rows = {row["arm"]: row for row in comparison["rateCost"]}
    assert rows["cand"]["notBeaten"] is True and rows["base"]["notBeaten"] is False
    base, cand = read_report(out / "base"), read_report(out / "cand")
    for report, row in ((base, rows["base"]), (cand, rows["cand"])):
        tokens = sum(t.measured.tokens.total for t in report.tasks if t.measured.tokens is not None)
        assert math.isclose(row["tokensPerSuccess"]["estimate"], tokens / sum(t.passes for t in report.tasks))
    markdown = (out / "comparison.md").read_text()
    assert "## Success rate against cost" in markdown and "| Not beaten |" in markdown
    shown = alisio(tmp_path, "eval", "compare", out / "base", out / "cand", "--format", "md")
    assert shown.returncode == 0, shown.stderr
    assert "## Success rate against cost" in shown.stdout
    assert [line.rsplit("|", 2)[-2].strip() for line in shown.stdout.splitlines() if line.startswith("| baseline |")
            or line.startswith("| candidate |")] == ["no", "yes"]  # fmt: skip
