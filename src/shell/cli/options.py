"""Option types shared by several commands (the spec's global flags).

The spec writes global flags after the sub-command (``alisio eval run X --allow-write``), so each command
declares the ones it uses from here rather than a root callback.
Import only typer here: ``alisio --help`` must stay fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Json = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout; messages go to stderr.")]
AllowWrite = Annotated[bool, typer.Option("--allow-write", help="Grant the write effect (file edits).")]
AllowProcess = Annotated[bool, typer.Option("--allow-process", help="Grant the process effect (bash).")]
AllowExternal = Annotated[
    bool, typer.Option("--allow-external", help="Grant the external effect (network fetches).")
]
AllowAnalysis = Annotated[
    bool, typer.Option("--allow-analysis", help="Grant the analysis effect (static checks).")
]
ReadOnly = Annotated[
    bool, typer.Option("--read-only", help="Deny every effect but read, whatever else is granted.")
]
Model = Annotated[str | None, typer.Option("--model", help="Model name; overrides the configuration.")]
BaseUrl = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible base URL; overrides the configuration.")
]
Cwd = Annotated[
    Path | None, typer.Option("--cwd", help="Workspace directory (default: the current directory).")
]

# The lab's commands (eval run, variants, record) share these.
SuiteArg = Annotated[str, typer.Argument(help="A suite id or the name of its directory.", show_default=False)]
Tasks = Annotated[str | None, typer.Option("--tasks", help="Only these tasks: id,id (or suite/id).")]
Seed = Annotated[
    int, typer.Option("--seed", min=0, help="Seed of the run order; each run gets seed + repetition.")
]
Keep = Annotated[bool, typer.Option("--keep", help="Keep each run's temporary directory; print its path.")]
SuiteDir = Annotated[
    Path | None,
    typer.Option("--suite-dir", help="A suite, or a directory of suites, outside the bundled ones."),
]
Yes = Annotated[bool, typer.Option("--yes", help="Accept a --suite-dir suite without asking.")]
AllowSuiteFull = Annotated[bool, typer.Option("--allow-suite-full", help='Let tasks with mode "full" run.')]
InputRate = Annotated[
    float | None,
    typer.Option("--input-rate", min=0.0, help="USD per million input tokens (with --output-rate)."),
]
OutputRate = Annotated[
    float | None,
    typer.Option("--output-rate", min=0.0, help="USD per million output tokens (with --input-rate)."),
]
Script = Annotated[
    Path | None,
    typer.Option(
        "--script",
        help="Play scripted assistant turns instead of a model (testing): one JSON file for every run, "
        "or a directory of <task-id>.json.",
    ),
]
