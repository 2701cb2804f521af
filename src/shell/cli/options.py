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
