"""``[lab]`` of config.toml: how the lab runs, not what it measures (never in the configuration hash, never a
variant override). ``alisio.core.harness.config`` reads it with the rest of the file::

    [lab]
    jobs = 4                          # runs at once (default: 4 live, the number of CPUs for replay/scripted)
    sandbox = "bwrap"                 # where commands run when --sandbox is not given: none (default) | bwrap
    sandboxProcesses = 512            # the sandbox's limits (these are the defaults): processes at once,
    sandboxFileBytes = 1073741824     # the largest file written, the address space of one process, and the
    sandboxMemoryBytes = 8589934592   # size of the private /tmp and HOME
    sandboxTmpBytes = 1073741824
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from alisio.core.base import Frozen
from alisio.core.harness.sandbox import SandboxKind, SandboxLimits

__all__ = ["LabSettings"]


class LabSettings(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[lab]``: how the lab runs (not measured: never in the hash, never a variant override)."""

    jobs: Annotated[int, Meta(ge=1, le=1024)] | None = None
    """Runs at once when ``--jobs`` is not given (``None``: 4 for live runs, the number of CPUs for replay and
    scripted runs)."""
    sandbox: SandboxKind | None = None
    """Where the agent's commands and the command verifiers run when ``--sandbox`` is not given (``None``:
    ``none``); ``alisio run`` reads it too."""
    sandbox_processes: Annotated[int, Meta(ge=16, le=1 << 20)] = SandboxLimits().max_processes
    sandbox_file_bytes: Annotated[int, Meta(ge=1 << 20, le=1 << 50)] = SandboxLimits().max_file_bytes
    sandbox_memory_bytes: Annotated[int, Meta(ge=1 << 20, le=1 << 50)] = SandboxLimits().max_memory_bytes
    sandbox_tmp_bytes: Annotated[int, Meta(ge=1 << 20, le=1 << 50)] = SandboxLimits().tmp_bytes

    def sandbox_limits(self) -> SandboxLimits:
        """The limits of ``--sandbox bwrap`` (``alisio.core.harness.sandbox.SandboxLimits``)."""
        return SandboxLimits(
            max_processes=self.sandbox_processes,
            max_file_bytes=self.sandbox_file_bytes,
            max_memory_bytes=self.sandbox_memory_bytes,
            tmp_bytes=self.sandbox_tmp_bytes,
        )
