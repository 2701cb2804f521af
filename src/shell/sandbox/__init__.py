"""Running commands inside bubblewrap: the checks before a command starts (``bwrap``), the per-command
wrapper (``Sandbox.command``), and the reusable wrapper of a whole external agent with its network relay
(``agents``). The policy itself, as data, is ``alisio.core.harness.sandbox``."""

from alisio.shell.sandbox.bwrap import (
    INSTALL_HINT,
    Sandbox,
    SandboxRun,
    SandboxUnavailable,
    probe_sandbox,
    require_sandbox,
)

__all__ = ["INSTALL_HINT", "Sandbox", "SandboxRun", "SandboxUnavailable", "probe_sandbox", "require_sandbox"]
