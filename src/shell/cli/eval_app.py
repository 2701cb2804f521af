"""``alisio eval``: the Reliability Lab's sub-commands, one module each, registered here."""

from __future__ import annotations

import typer

eval_app = typer.Typer(
    no_args_is_help=True,
    help="The Reliability Lab: run suites k times, judge each run, report pass rates with their uncertainty.",
)


@eval_app.callback()
def _eval() -> None:
    """The Reliability Lab: run suites k times, judge each run, report pass rates with their uncertainty."""


from alisio.shell.cli.eval_compare import compare  # noqa: E402

eval_app.command("compare")(compare)

from alisio.shell.cli.eval_validate import validate  # noqa: E402

eval_app.command("validate")(validate)

from alisio.shell.cli.eval_run import run  # noqa: E402

eval_app.command("run")(run)

from alisio.shell.cli.eval_list import list_suites  # noqa: E402

eval_app.command("list")(list_suites)

from alisio.shell.cli.eval_variants import variants  # noqa: E402

eval_app.command("variants")(variants)

from alisio.shell.cli.eval_record import record  # noqa: E402

eval_app.command("record")(record)

from alisio.shell.cli.eval_ci import ci  # noqa: E402

eval_app.command("ci")(ci)

from alisio.shell.cli.eval_export import export  # noqa: E402

eval_app.command("export")(export)

from alisio.shell.cli.eval_power import power  # noqa: E402

eval_app.command("power")(power)
