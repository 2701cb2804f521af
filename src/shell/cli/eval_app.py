"""``alisio eval``: the Reliability Lab's sub-commands, one module each, listed in workflow order.

init writes a starter suite; list and validate look at suites; mock-endpoint serves a scripted model to try an agent on;
run and record run them, runs lists what was run and show opens one run, diff says where two runs part, rejudge
judges a report's runs again without the model;
compare and variants compare, power plans how many runs a comparison needs; export shares; ci replays.

A command's module is imported only when that command is used, or ``alisio eval --help`` lists them all
(``alisio.shell.cli.style.LazyGroup``). Each command module also imports its heavy dependencies inside the
command.
"""

from __future__ import annotations

import typer

from alisio.shell.cli.style import LazyGroup

__all__ = ["COMMANDS", "DOCS", "eval_app"]

COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("alisio.shell.cli.eval_init", "init"),
    "list": ("alisio.shell.cli.eval_list", "list_suites"),
    "validate": ("alisio.shell.cli.eval_validate", "validate"),
    "selfcheck": ("alisio.shell.cli.eval_selfcheck", "selfcheck"),
    "import": ("alisio.shell.cli.eval_import", "import_suite"),
    "mock-endpoint": ("alisio.shell.cli.eval_mock_endpoint", "mock_endpoint"),
    "run": ("alisio.shell.cli.eval_run", "run"),
    "runs": ("alisio.shell.cli.eval_runs", "runs"),
    "show": ("alisio.shell.cli.eval_show", "show"),
    "diff": ("alisio.shell.cli.eval_diff", "diff"),
    "record": ("alisio.shell.cli.eval_record", "record"),
    "rejudge": ("alisio.shell.cli.eval_rejudge", "rejudge"),
    "plan": ("alisio.shell.cli.eval_plan", "plan"),
    "merge": ("alisio.shell.cli.eval_merge", "merge"),
    "compare": ("alisio.shell.cli.eval_compare", "compare"),
    "variants": ("alisio.shell.cli.eval_variants", "variants"),
    "stability": ("alisio.shell.cli.eval_stability", "stability"),
    "power": ("alisio.shell.cli.eval_power", "power"),
    "export": ("alisio.shell.cli.eval_export", "export"),
    "ci": ("alisio.shell.cli.eval_ci", "ci"),
}
"""Each command's name, in workflow order, and where its function is (module, attribute)."""

DOCS: dict[str, str] = {
    "init": "docs/lab.md#a-suite-of-your-own-to-start-from-alisio-eval-init",
    "list": "docs/lab.md#running-a-suite-alisio-eval-list-and-alisio-eval-run",
    "validate": "docs/lab.md#suites-and-alisio-eval-validate",
    "selfcheck": "docs/suites-from-elsewhere.md#checking-a-suite-alisio-eval-selfcheck",
    "import": "docs/suites-from-elsewhere.md#importers-alisio-eval-import",
    "mock-endpoint": "docs/agents.md#trying-an-agent-alisio-eval-mock-endpoint",
    "run": "docs/lab.md#running-a-suite-alisio-eval-list-and-alisio-eval-run",
    "runs": "docs/lab.md#transcripts-alisio-eval-show-and-alisio-eval-runs",
    "show": "docs/lab.md#transcripts-alisio-eval-show-and-alisio-eval-runs",
    "diff": "docs/why-did-it-fail.md#where-two-runs-part-alisio-eval-diff",
    "record": "docs/replay-and-ci.md#replay-and-cassettes",
    "rejudge": "docs/why-did-it-fail.md#judging-again-without-the-model-alisio-eval-rejudge",
    "plan": "docs/distributed.md#a-plan-for-any-scheduler-alisio-eval-plan",
    "merge": "docs/distributed.md#merging-the-shards-alisio-eval-merge",
    "compare": "docs/compare-and-statistics.md#comparing-two-reports-alisio-eval-compare",
    "variants": "docs/compare-and-statistics.md#comparing-configurations-eval-variants",
    "power": "docs/compare-and-statistics.md#planning-runs-alisio-eval-power",
    "stability": "docs/suites-from-elsewhere.md#flaky-tasks-alisio-eval-stability",
    "export": "docs/lab.md#sharing-a-run-alisio-eval-export",
    "ci": "docs/replay-and-ci.md#alisio-eval-ci",
}
"""The page and heading of the repository that documents each command: the last line of its help names it as
``alisio help lab#heading`` (``alisio.core.manual.docs_reference``), which prints it from the wheel too."""


class _EvalGroup(LazyGroup):
    lazy = COMMANDS
    docs = DOCS


eval_app = typer.Typer(
    cls=_EvalGroup,
    no_args_is_help=True,
    help="The Reliability Lab: run suites k times, judge each run, report pass rates with their uncertainty.",
    epilog="Docs: alisio help lab",
)


@eval_app.callback()
def _eval() -> None:
    """The Reliability Lab: run suites k times, judge each run, report pass rates with their uncertainty."""
