"""The ``alisio`` command: composes the sub-apps and owns the exit-code contract.

Exit codes (DESIGN.md, the spec): 0 completed; 1 usage or infrastructure error; 2 replay divergence;
3 compare of incompatible suites; 130 after Ctrl-C (the shell convention, also typer's). Click/typer report usage errors with 2, which would read as a divergence,
so ``main`` runs the command non-standalone and maps every usage error to 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer
from typer import _click as click

from alisio.shell.cli.eval_app import eval_app
from alisio.shell.cli.run_cmd import run_command

app = typer.Typer(
    name="alisio",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    help="A headless coding-agent harness (alisio run) and its Reliability Lab (alisio eval).",
)
app.add_typer(eval_app, name="eval")
app.command("run")(run_command)


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` and return the documented exit code (never raises for a usage error)."""
    command = typer.main.get_command(app)
    try:
        result = command.main(
            args=list(argv) if argv is not None else None, prog_name="alisio", standalone_mode=False
        )
    except click.exceptions.NoArgsIsHelpError as error:
        error.show()
        return 0
    except click.exceptions.ClickException as error:
        error.show()
        return 1
    except typer.Abort:
        print("Aborted.", file=sys.stderr)
        return 1
    return result if isinstance(result, int) else 0


def main() -> None:
    """Console-script entry point."""
    sys.exit(run_cli())
