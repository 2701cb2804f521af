"""``alisio eval variants <suite> --variants compare.json``: run configuration variants and compare them.

- The options are those of ``eval run`` (``--tasks``, ``--k`` default 5, ``--seed``, ``--keep``, ``--out``,
  ``--suite-dir``, ``--yes``, ``--allow-suite-full``, the rates, ``--json``, ``--allow-*``, ``--read-only``,
  ``--model``, ``--base-url``, ``--script``) plus ``--variants FILE``. ``--mode replay`` is refused: variants
  compares configurations, replay pins one.
- compare.json is validated before the first run: an unknown key, or one that does not enter the
  configuration hash (provider, plugins, MCP, paths), rejects the file naming the variant, the key and why.
- The variants run interleaved (A, B, then B, A...) over the same tasks, repetitions and seeds. The root
  directory (``<dataDir>/eval/<runId>/`` or ``--out DIR``) gets one report directory per variant
  (``<variant-id>/report.json``, ``report.md``, ``runs.jsonl``) and comparison.json and comparison.md, the
  first variant (the baseline) against each other one.
- stderr gets one line per run (``[3/20] early-compaction fix-add #2: pass (...)``), each variant's summary
  and the paths. stdout gets data only: without ``--json`` the comparison's Markdown (as ``eval compare``
  prints it); with ``--json`` one JSON line per variant (``{"type": "variant_report", "variant": id,
  "report": ...}``), then one per comparison (``{"type": "comparison", "baseline": id, "candidate": id,
  "comparison": ...}``).
- Exit codes as ``eval run``: 0 completed (whichever tasks passed); 1 usage or infrastructure error, some run
  ended error, or Ctrl-C (the reports and the comparison of the finished runs are still written).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.shell.cli.common import LabRequest, live_plan, load_lab_config, say, start_lab
from alisio.shell.cli.eval_run import DEFAULT_K, ModeChoice
from alisio.shell.cli.options import (
    AllowAnalysis,
    AllowExternal,
    AllowProcess,
    AllowSuiteFull,
    AllowWrite,
    BaseUrl,
    InputRate,
    Json,
    Keep,
    Model,
    OutputRate,
    ReadOnly,
    Script,
    Seed,
    SuiteArg,
    SuiteDir,
    Tasks,
    Yes,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from alisio.core.harness.config import MeasuredConfig
    from alisio.core.lab.suite import Task
    from alisio.core.lab.variants import VariantsPlan
    from alisio.shell.lab.pipeline import LabRun
    from alisio.shell.lab.variants import VariantsResult

REFUSE_REPLAY = "variants refuses replay: it compares configurations, replay pins one"
PREFIX = "alisio eval variants"


def variants(
    suite: SuiteArg,
    variants_file: Annotated[
        Path,
        typer.Option(
            "--variants",
            help="The compare.json file: the suite and two or more variants.",
            show_default=False,
        ),
    ],
    tasks: Tasks = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Repetitions per task and variant.")] = DEFAULT_K,
    seed: Seed = 0,
    mode: Annotated[ModeChoice, typer.Option("--mode", help="live only: variants refuses replay.")] = (
        ModeChoice.LIVE
    ),
    keep: Keep = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the variant directories and the comparison directly here."),
    ] = None,
    suite_dir: SuiteDir = None,
    yes: Yes = False,
    allow_suite_full: AllowSuiteFull = False,
    input_rate: InputRate = None,
    output_rate: OutputRate = None,
    json_output: Json = False,
    allow_write: AllowWrite = False,
    allow_process: AllowProcess = False,
    allow_external: AllowExternal = False,
    allow_analysis: AllowAnalysis = False,
    read_only: ReadOnly = False,
    model: Model = None,
    base_url: BaseUrl = None,
    script: Script = None,
) -> None:
    """Run configuration variants interleaved over the same tasks, report each, and compare them."""
    import os

    from alisio.shell.lab.pipeline import LabError, granted_effects, rates_from

    granted_flags = {"write": allow_write, "process": allow_process, "external": allow_external}
    granted_flags["analysis"] = allow_analysis
    try:
        if mode is ModeChoice.REPLAY:
            raise LabError(REFUSE_REPLAY)
        request = LabRequest(
            suite=suite,
            wanted=tasks.split(",") if tasks is not None else None,
            k=k,
            seed=seed,
            keep=keep,
            out=out,
            suite_dir=suite_dir,
            yes=yes,
            allow_suite_full=allow_suite_full,
            rates=rates_from(input_rate, output_rate),
            json_output=json_output,
            granted=granted_effects(granted_flags),
            read_only=read_only,
            model=model,
            base_url=base_url,
            script=script,
            env=os.environ,
        )
        code = _execute(request, variants_file)
    except LabError as error:
        for line in error.lines:
            say(f"{PREFIX}: {line}")
        raise typer.Exit(1) from None
    except (
        KeyboardInterrupt
    ):  # before the first run (a run's own Ctrl-C is handled by alisio.shell.lab.variants)
        say(f"{PREFIX}: interrupted; nothing was run")
        raise typer.Exit(1) from None
    raise typer.Exit(code)


def _preflight_each(
    plan: VariantsPlan, check: Callable[[MeasuredConfig], tuple[Task, ...]]
) -> tuple[Task, ...]:
    """The selected tasks, once they may run under every variant's configuration (agents may differ).

    A problem every variant shares (a policy, an unknown task) is said once; otherwise each line names its
    variant.
    """
    from alisio.shell.lab.pipeline import LabError

    selected: tuple[Task, ...] = ()
    failing: list[tuple[str, tuple[str, ...]]] = []
    for variant in plan.variants:
        try:
            selected = check(variant.measured)
        except LabError as error:
            failing.append((variant.id, error.lines))
    if not failing:
        return selected
    if len(failing) == len(plan.variants) and all(lines == failing[0][1] for _, lines in failing):
        raise LabError(*failing[0][1])
    raise LabError(*(f"variant {variant_id}: {line}" for variant_id, lines in failing for line in lines))


def _execute(request: LabRequest, variants_file: Path) -> int:
    from alisio.core.lab.report import Mode
    from alisio.shell.lab.pipeline import LabError, bundled_suites_root, find_suite, preflight, unwritable_dir
    from alisio.shell.lab.scripted_plan import scripted_plan
    from alisio.shell.lab.variants import read_variants, variant_labs

    loaded_config = load_lab_config(request.env)
    choice = find_suite(request.suite, request.suite_dir, bundled_suites_root())
    plan = read_variants(variants_file, loaded_config.config.measured, choice.loaded)
    selected = _preflight_each(
        plan,
        lambda measured: preflight(
            choice.loaded,
            request.wanted,
            request.granted,
            read_only=request.read_only,
            allow_suite_full=request.allow_suite_full,
            measured=measured,
        ),
    )
    if request.out is not None and (problem := unwritable_dir(request.out, "--out")) is not None:
        raise LabError(problem)
    provider = (
        scripted_plan(request.script, selected, request.model)
        if request.script is not None
        else live_plan(loaded_config, request.model, request.base_url, request.env)
    )
    try:
        base = start_lab(request, choice, selected, provider, plan.variants[0].measured, Mode.LIVE)
        return _run_and_show(
            plan, variant_labs(base, plan, base.directory), base.directory, request.json_output
        )
    finally:
        provider.close()


def _headline(plan: VariantsPlan, lab: LabRun) -> list[str]:
    from alisio.core.lab.variants import describe_overrides

    suite = lab.loaded.suite
    n, tasks = len(plan.variants), len(lab.tasks)
    noun = "task" if tasks == 1 else "tasks"
    head = f"{suite.suite_id} {suite.suite_version}: {n} variants x {tasks} {noun} x k={lab.k} = "
    head += (
        f"{n * tasks * lab.k} runs, interleaved ({lab.provider.id}, {lab.provider.model}, seed {lab.seed})"
    )
    lines = [head]
    for index, variant in enumerate(plan.variants):
        role = " (baseline)" if index == 0 and variant.id != "baseline" else ""
        lines.append(
            f"  {variant.id}{role}: config {variant.config_hash[:16]}, {describe_overrides(variant.overrides)}"
        )
    return lines + [f"warning: {warning}" for warning in plan.warnings]


def _run_and_show(plan: VariantsPlan, labs: tuple[LabRun, ...], root: Path, json_output: bool) -> int:
    from alisio.core.lab.outcome import exit_code_for
    from alisio.core.lab.progress import summary_table
    from alisio.core.lab.variants import render_variants_markdown, variant_progress_line
    from alisio.shell.lab.store import REPORT_MD
    from alisio.shell.lab.variants import COMPARISON_JSON, COMPARISON_MD, run_variants

    for line in _headline(plan, labs[0]):
        say(line)
    result = run_variants(
        plan, labs, root, say=say, on_record=lambda r, i, n: say(variant_progress_line(i, n, r))
    )
    if json_output:
        _show_json(result)
    else:
        sys.stdout.write(render_variants_markdown(result.comparison))
        sys.stdout.flush()
    for variant, lab, report in zip(plan.variants, labs, result.reports, strict=True):
        say("")
        say(f"variant {variant.id}:")
        say(summary_table(report))
        say(f"report: {lab.directory / REPORT_MD}")
    say("")
    say(f"comparison: {root / COMPARISON_MD} ({COMPARISON_JSON} beside it)")
    records = [record for arm in result.records for record in arm]
    errored = sum(record.status == "error" for record in records)
    if errored:
        say(f"{errored} runs ended error (infrastructure; excluded from every rate): exit 1")
    return 1 if result.interrupted else exit_code_for(records)


def _show_json(result: VariantsResult) -> None:
    import msgspec

    encoder = msgspec.json.Encoder()
    out = sys.stdout.buffer
    for info, report in zip(result.comparison.variants, result.reports, strict=True):
        out.write(encoder.encode({"type": "variant_report", "variant": info.id, "report": report}) + b"\n")
    for entry in result.comparison.comparisons:
        line = {
            "type": "comparison",
            "baseline": entry.baseline,
            "candidate": entry.candidate,
            "comparison": entry.comparison,
        }
        out.write(encoder.encode(line) + b"\n")
    out.flush()
