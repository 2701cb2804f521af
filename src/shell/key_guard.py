"""Keeping alisio's own copy of the API key out of reach of the processes it starts: ``guard_process``.

An API key alisio reads from its environment is in its memory and in ``/proc/<pid>/environ``, which shows the
process's *initial* environment block (unsetting ``os.environ`` does not change it). Any process of the same
user can read both: an external agent run without a sandbox, or a bash command the built-in agent's model
asked for. On Linux, ``guard_process`` (the ``alisio`` command calls it first) sets ``PR_SET_DUMPABLE`` to 0:
``/proc/<pid>/environ`` and ``/proc/<pid>/mem`` become root's and ptrace by the same user is refused, so a
process of the same user that is not root reads neither. What it does not cover, as ``exposure`` says:

- alisio running as root: the agent it starts without a sandbox is root too, and root reads any process;
- the key's other copies: the shell or CI runner that started alisio has it in its own environment (readable
  by processes of that user), and so has any file it came from (``.env``, a shell profile).

``--sandbox bwrap`` covers all of these (the agent sees none of the host's processes or files). The side
effects: alisio writes no core dump and a debugger of the same user cannot attach to it; the programs it
starts are ordinary (``execve`` makes a process dumpable again).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Sequence
from typing import Final

__all__ = ["exposure", "guard_process", "guarded"]

_PR_SET_DUMPABLE: Final = 4
_PR_GET_DUMPABLE: Final = 3
_ATTEMPTED: list[bool] = []
"""Set once ``guard_process`` ran (the ``alisio`` command; not a caller that imports the CLI in-process)."""


def _prctl(option: int, value: int) -> int | None:
    """``prctl(option, value)``'s result, or ``None`` where there is no prctl."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        result = libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        return None
    return int(result)


def guard_process() -> bool:
    """Make this process unreadable to other processes of the same user (``PR_SET_DUMPABLE`` 0); whether it
    is now."""
    _ATTEMPTED[:] = [True]
    _prctl(_PR_SET_DUMPABLE, 0)
    return guarded()


def guarded() -> bool:
    """Whether this process's environment and memory are unreadable to other processes of its user."""
    return _prctl(_PR_GET_DUMPABLE, 0) == 0


def exposure(names: str, credentials: Sequence[str]) -> str | None:
    """Why external agents run without a sandbox could read ``credentials`` (the names of the variables of
    alisio's environment that hold one) from this process, as the warning printed before the first run
    (``names``: the agents); ``None`` when they cannot (see the module docstring for the key's other copies)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        why = "alisio runs as root, so does the agent, and root can read alisio's environment and memory"
    elif _ATTEMPTED and not guarded():
        why = "this system does not let alisio hide its environment and memory from your other processes"
    else:
        return None
    return (
        f"warning: external agents {names} run without a sandbox: {why}, which hold {', '.join(credentials)}; "
        "use --sandbox bwrap to keep them from it (docs/agents.md#key-handling)"
    )
