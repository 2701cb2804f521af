"""Properties of ``alisio.core.harness.sandbox``: the bwrap argv keeps its guarantees for any input, and
``denial_in`` names what the sandbox refused."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.harness.sandbox import (
    DEV_SHM,
    SANDBOX_HOME,
    WORKSPACE,
    RootEntry,
    SandboxLimits,
    bwrap_argv,
    denial_in,
    inside_path,
)
from tests.property.strategies_sandbox import commands, roots, sandbox_limits


def _argv(
    command: list[str], entries: tuple[RootEntry, ...], limits: SandboxLimits, network: bool
) -> tuple[str, ...]:
    return bwrap_argv(
        command, bwrap="/usr/bin/bwrap", roots=entries, workspace="/tmp/ws", network=network, limits=limits
    )


@given(commands, roots, sandbox_limits, st.booleans())
@example(
    ["--share-net", "--bind", "/", "/"],
    (RootEntry(path="/usr"), RootEntry(path="/etc")),
    SandboxLimits(),
    False,
)
def test_the_command_comes_last_verbatim_after_the_limits(
    command: list[str], entries: tuple[RootEntry, ...], limits: SandboxLimits, network: bool
) -> None:
    """The command is the argv's tail, unchanged, after prlimit's options and a ``--``: nothing in it is read
    as an option of bwrap or prlimit."""
    argv = _argv(command, entries, limits, network)
    assert argv[len(argv) - len(command) :] == tuple(command)
    head = argv[: len(argv) - len(command)]
    assert head[-1] == "--" and head[-5] == "/usr/bin/prlimit"
    assert f"--nproc={limits.max_processes}" in head and f"--fsize={limits.max_file_bytes}" in head
    assert f"--as={limits.max_memory_bytes}" in head


@given(commands, roots, sandbox_limits, st.booleans())
def test_every_argv_isolates_and_shares_the_network_only_when_asked(
    command: list[str], entries: tuple[RootEntry, ...], limits: SandboxLimits, network: bool
) -> None:
    """New namespaces, death with the parent, a read-only root, the workspace at /workspace, private /tmp and
    HOME, and ``--share-net`` exactly when ``network``."""
    head = _argv(command, entries, limits, network)[: -len(command)]
    bwrap_part = head[: head.index("/usr/bin/prlimit")]
    for flag in ("--unshare-all", "--die-with-parent", "--as-pid-1"):
        assert flag in bwrap_part
    assert ("--share-net" in bwrap_part) is network
    pairs = list(zip(bwrap_part, bwrap_part[1:], bwrap_part[2:], strict=False))
    assert ("--bind", "/tmp/ws", WORKSPACE) in pairs
    assert ("--remount-ro", "/", "--hostname") in pairs
    binds = [(flag, src) for flag, src, _ in pairs if flag in ("--bind", "--ro-bind", "--symlink")]
    for entry in entries:
        assert (("--symlink", entry.link) if entry.link else ("--ro-bind", entry.path)) in binds
    assert [src for flag, src in binds if flag == "--bind"] == ["/tmp/ws"]  # nothing else is writable
    fours = list(zip(bwrap_part, bwrap_part[1:], bwrap_part[2:], bwrap_part[3:], strict=False))
    for private in ("/tmp", SANDBOX_HOME, DEV_SHM):  # each a tmpfs of its own, bounded
        assert ("--size", str(limits.tmp_bytes), "--tmpfs", private) in fours
    # bwrap's /dev (an unbounded tmpfs) is read-only once /dev/shm is mounted in it
    assert bwrap_part.index("--remount-ro") == bwrap_part.index(DEV_SHM) + 1
    assert bwrap_part[bwrap_part.index(DEV_SHM) + 2] == "/dev"
    env = [bwrap_part[i + 1 : i + 3] for i, arg in enumerate(bwrap_part) if arg == "--setenv"]
    assert ("HOME", SANDBOX_HOME) in env and ("TMPDIR", "/tmp") in env


@given(st.text(max_size=40))
@example("")
@example("src/")
def test_inside_path_stays_under_the_workspace(relative: str) -> None:
    """A workspace-relative path maps below /workspace (``.`` and the empty path to /workspace itself)."""
    path = inside_path(relative)
    assert path == WORKSPACE or path.startswith(WORKSPACE + "/")


@given(st.text(max_size=200), st.booleans())
@example("touch: cannot touch '/etc/x': Read-only file system", False)
@example("OSError: [Errno 101] Network is unreachable", True)
def test_denial_in_names_each_refusal_and_only_those(noise: str, network: bool) -> None:
    """Each refusal's marker is named; a connection failure only without network; plain output names none."""
    assert denial_in("all good\nexit 0", network=network) is None
    said = denial_in(noise + "\ntouch: cannot touch '/x': Read-only file system", network=network)
    assert said is not None and "read-only" in said
    refused = denial_in(noise + "\nConnection refused", network=network)
    assert (refused is not None and "network" in refused) or network
    if network and "Read-only" not in noise and "EROFS" not in noise:
        assert denial_in("ConnectionRefusedError: [Errno 111] Connection refused", network=True) is None
    too_big = denial_in("dd: error writing 'big': File too large", network=network)
    assert too_big is not None and "file size" in too_big
    forks = denial_in("bash: fork: retry: Resource temporarily unavailable", network=network)
    assert forks is not None and "process limit" in forks


_ARITY = {"--bind": 2, "--ro-bind": 2, "--symlink": 2, "--dev": 1, "--proc": 1, "--perms": 1, "--size": 1}
_ARITY |= {"--tmpfs": 1, "--remount-ro": 1, "--hostname": 1, "--chdir": 1}


@given(
    commands,
    st.lists(st.tuples(st.sampled_from(["HOME", "XDG_DATA_HOME", "TMPDIR", "X"]), st.text(max_size=20))),
)
def test_the_callers_variables_are_set_last_so_they_win(
    command: list[str], env: list[tuple[str, str]]
) -> None:
    """An external agent's HOME and XDG directories (``env``) come after the sandbox's own HOME, TMPDIR and PWD
    and after the host's XDG variables are unset (bwrap applies them in order), and before the command."""
    argv = bwrap_argv(command, bwrap="/usr/bin/bwrap", roots=(), workspace="/tmp/ws", env=env)
    settings: list[tuple[str, ...]] = []
    i = 1
    while argv[i] != "--":  # every option's arity is known: walk them, never mistaking a value for one
        arity = {"--setenv": 2, "--unsetenv": 1}.get(argv[i])
        if arity is not None:
            settings.append(argv[i : i + 1 + arity])
            i += 1 + arity
        else:
            i += _ARITY.get(argv[i], 0) + 1
    tail = settings[len(settings) - len(env) :] if env else []
    assert tail == [("--setenv", name, value) for name, value in env]
    assert ("--setenv", "HOME", SANDBOX_HOME) in settings[: len(settings) - len(env)]
