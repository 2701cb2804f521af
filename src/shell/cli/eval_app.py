"""``alisio eval``: the Reliability Lab's sub-commands, one module each, listed in workflow order.

list and validate look at suites; run and record run them, runs lists what was run and show opens one run;
compare and variants compare, power plans how many runs a comparison needs; export shares; ci replays.

A command's module is imported only when that command is used, or ``alisio eval --help`` lists them all
(``alisio.shell.cli.style.LazyGroup``). Each command module also imports its heavy dependencies inside the
command.
"""

from __future__ import annotations

import typer

from alisio.shell.cli.style import LazyGroup

__all__ = ["COMMANDS", "eval_app"]

COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("alisio.shell.cli.eval_list", "list_suites"),
    "validate": ("alisio.shell.cli.eval_validate", "validate"),
    "run": ("alisio.shell.cli.eval_run", "run"),
    "runs": ("alisio.shell.cli.eval_runs", "runs"),
    "show": ("alisio.shell.cli.eval_show", "show"),
    "record": ("alisio.shell.cli.eval_record", "record"),
    "compare": ("alisio.shell.cli.eval_compare", "compare"),
    "variants": ("alisio.shell.cli.eval_variants", "variants"),
    "power": ("alisio.shell.cli.eval_power", "power"),
    "export": ("alisio.shell.cli.eval_export", "export"),
    "ci": ("alisio.shell.cli.eval_ci", "ci"),
}
"""Each command's name, in workflow order, and where its function is (module, attribute)."""


class _EvalGroup(LazyGroup):
    lazy = COMMANDS


eval_app = typer.Typer(
    cls=_EvalGroup,
    no_args_is_help=True,
    help="The Reliability Lab: run suites k times, judge each run, report pass rates with their uncertainty.",
)


@eval_app.callback()
def _eval() -> None:
    """The Reliability Lab: run suites k times, judge each run, report pass rates with their uncertainty."""
