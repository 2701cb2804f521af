"""``alisio eval``: the Reliability Lab's sub-commands, one module each, registered in workflow order.

list and validate look at suites; run and record run them, runs lists what was run and show opens one run; compare and variants compare, power plans how
many runs a comparison needs; export shares; ci replays. Each command module imports its heavy dependencies inside the command, so ``--help`` stays fast.
"""

from __future__ import annotations

import typer

from alisio.shell.cli.eval_ci import ci
from alisio.shell.cli.eval_compare import compare
from alisio.shell.cli.eval_export import export
from alisio.shell.cli.eval_list import list_suites
from alisio.shell.cli.eval_power import power
from alisio.shell.cli.eval_record import record
from alisio.shell.cli.eval_run import run
from alisio.shell.cli.eval_runs import runs
from alisio.shell.cli.eval_show import show
from alisio.shell.cli.eval_validate import validate
from alisio.shell.cli.eval_variants import variants
from alisio.shell.cli.style import Command, Group

eval_app = typer.Typer(
    cls=Group,
    no_args_is_help=True,
    help="The Reliability Lab: run suites k times, judge each run, report pass rates with their uncertainty.",
)


@eval_app.callback()
def _eval() -> None:
    """The Reliability Lab: run suites k times, judge each run, report pass rates with their uncertainty."""


for _name, _command in (
    ("list", list_suites),
    ("validate", validate),
    ("run", run),
    ("runs", runs),
    ("show", show),
    ("record", record),
    ("compare", compare),
    ("variants", variants),
    ("power", power),
    ("export", export),
    ("ci", ci),
):
    eval_app.command(_name, cls=Command)(_command)
