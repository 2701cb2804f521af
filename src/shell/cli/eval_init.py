"""``alisio eval init DIR``: write a starter suite (a passing and a failing task) and say how to run it.

DIR must not exist, or be an empty directory. The files are written into a temporary directory beside DIR
and moved into place at once, so a failure leaves nothing behind. Exit 0 written, 1 refused (one line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alisio.core.exit_codes import ExitCode

Directory = Annotated[
    Path, typer.Argument(help="Where to write the suite (new, or an empty directory).", show_default=False)
]


def init(directory: Directory) -> ExitCode:
    """Write a starter suite with a passing and a failing task, runnable without a key."""
    import shutil
    import tempfile

    from alisio.core.lab.outputs.failing import shell_word
    from alisio.core.lab.suites.starter import starter_files, starter_next_steps
    from alisio.shell.cli.common import say
    from alisio.shell.errors import CommandError

    if directory.is_symlink() or (
        directory.exists() and (not directory.is_dir() or any(directory.iterdir()))
    ):
        raise CommandError(f"{directory}: already exists and is not an empty directory: name a new one")
    parent = directory.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".alisio-init-", dir=parent))
    except OSError as error:
        raise CommandError(f"{directory}: cannot write here: {error.strerror or error}") from None
    try:
        for name, text in starter_files():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if directory.exists():
            directory.rmdir()  # empty (checked above): the rename below needs the name free
        staging.rename(directory)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise CommandError(f"{directory}: cannot write the suite: {error.strerror or error}") from None
    say(f"wrote a starter suite in {directory} (2 tasks: fix-add, fix-mul)")
    for line in starter_next_steps(shell_word(str(directory))):
        say(line)
    return ExitCode.OK
