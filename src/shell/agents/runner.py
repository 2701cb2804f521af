"""``ExternalRunner``: one run of an external agent's CLI in the workspace, through a per-run proxy.

For each run it makes a private run directory (HOME, XDG directories, the prompt file, the preset's config
files), starts a ``RunProxy`` on 127.0.0.1 at a random port, and starts the agent:

- in the workspace, in a process group of its own, with stdin closed (or fed the prompt and closed);
- with an environment reduced to a few basics (PATH, locale, TMPDIR), the agent's ``env`` allow-list and
  what the preset needs; its base URL points at the proxy and its key is the run's token (random, made here
  for this run only: the proxy forwards only requests that carry it): no variable whose value holds the
  real key reaches it;
- carrying the run's process mark, so whatever it leaves behind is stopped when it ends, as ``bash``'s are.

Under ``--sandbox bwrap`` (``job.sandbox``) the agent runs in bubblewrap (``alisio.shell.sandbox.agents``): the
copy at ``/workspace``, the run directory bound as ``/home/sandbox`` (its HOME, XDG directories, config files
and prompt file below it), its install tree read-only, no network; the proxy listens on a unix socket bound
in, which the relay inside serves on ``127.0.0.1:RELAY_PORT``, the base URL the agent is given. Those paths
and that port are the same in every run, and ``/home/sandbox`` fingerprints as ``<run>`` as the run
directory does outside.

``maxWallMs`` kills the whole group; a budget the proxy refuses ends it too. Its stdout and stderr are kept
head and tail (``OUTPUT_CHARS`` each) in the run's ``agent_exit`` event. An agent that cannot start, or a proxy
that cannot bind, is an ``error`` run with the reason, never an exception.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

import msgspec

from alisio.core.agents.cassette import AgentCassette, AgentCassetteHeader, unplayed_divergence
from alisio.core.agents.config import ExternalAgent
from alisio.core.agents.context_home import home_path
from alisio.core.agents.external import (
    RUN_DIR,
    argument_problem,
    invocation,
    lab_tools,
    noise_rules,
    prompt_problem,
    run_dir_rules,
    takes_files,
    tool_map,
)
from alisio.core.agents.mcp_config import mcp_place, mcp_refusal, with_mcp_servers
from alisio.core.agents.presets import Invocation, McpPlace, RunDirs
from alisio.core.agents.run import (
    AgentEnd,
    ProxiedCall,
    RunFacts,
    request_fingerprint,
    run_events,
    run_started,
)
from alisio.core.harness.events import RunEnded
from alisio.core.harness.faults import spec_text
from alisio.core.harness.sandbox import HOST_PATH_VARIABLES, SANDBOX_HOME, denial_in
from alisio.core.harness.toolenv import NO_PROMPTS
from alisio.core.lab.judges.verify import AgentTools
from alisio.core.replay.cassette import with_divergence
from alisio.core.replay.fingerprint import Rules, path_rules
from alisio.shell.agents.overlay import ContextOverlayFile, overlay
from alisio.shell.agents.proxy import Call, RunProxy
from alisio.shell.agents.replay import CassetteReplayer, recorded_cassette
from alisio.shell.agents.seam import AgentJob, AgentRun
from alisio.shell.harness.mcp_client import server_binds
from alisio.shell.harness.providers.faults import RunWire
from alisio.shell.harness.tools.bash import read_output, supervise_group
from alisio.shell.harness.tools.processes import marked, new_mark
from alisio.shell.sandbox.agents import RELAY_PORT, ProxyRoute, agent_command, agent_files
from alisio.shell.sandbox.bwrap import Launch, SandboxUnavailable
from alisio.shell.sandbox.relay import START_FAILED
from alisio.shell.stale import owned_prefix

__all__ = ["BASIC_ENV", "OUTPUT_CHARS", "ExternalRunner", "Upstream"]

OUTPUT_CHARS: Final = 20_000
"""The agent's stdout and stderr each keep at most this many characters (head and tail) in the transcript."""
MAX_OUTPUT_BYTES: Final = 256 << 20
"""An agent whose stdout or stderr passes this size is stopped (``agent_output``)."""
BASIC_ENV: Final = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL")
"""The user's variables every agent gets (besides its ``env`` allow-list)."""
_NO_LIMIT_S: Final = 7 * 24 * 3600.0


@dataclass(frozen=True)
class Upstream:
    """Where the proxy forwards: the lab's configured provider (the key stays here; each run's proxy has a
    client of its own, closed when the run ends)."""

    provider_id: str
    base_url: str
    key: str | None


@dataclass(frozen=True)
class ExternalRunner:
    """Runs one external agent (the same object for every run of a command)."""

    agent: ExternalAgent
    binary: str
    model: str
    upstream: Upstream
    environ: Mapping[str, str]
    """The user's environment (only ``BASIC_ENV`` and the agent's allow-list of it are passed)."""
    harness_version: str
    cassettes: Mapping[str, AgentCassette] | None = None
    """Replay: each task's cassette (the proxy answers from it; nothing is forwarded)."""
    recorded: dict[str, AgentCassette] | None = None
    """Record: filled with each run's cassette, by task id."""
    suite: tuple[str, str] = ("", "")
    """The suite's id and version (for a recorded cassette's header)."""
    proxy_port: int = 0
    """The proxies' port (0: a random free one each run)."""

    def run(self, job: AgentJob) -> AgentRun:
        run_dir = Path(tempfile.mkdtemp(prefix=owned_prefix(f"agent-{job.task.id}")))
        # a unix socket's path is short (108 bytes): the sandboxed proxy's gets a directory of its own
        sock_dir = Path(tempfile.mkdtemp(prefix=owned_prefix("sock"))) if job.sandbox is not None else None
        try:
            return self._run_in(job, _place(job, run_dir, sock_dir, takes_files(self.agent)))
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
            if sock_dir is not None:
                shutil.rmtree(sock_dir, ignore_errors=True)

    def _facts(self, job: AgentJob) -> RunFacts:
        return RunFacts(
            prompt=job.task.prompt,
            provider=self.upstream.provider_id,
            model=job.model or self.model,
            agent=self.agent.name,
            kind=self.agent.kind,
            config_hash=job.config_hash,
            harness_version=self.harness_version,
        )

    def _failed(self, job: AgentJob, reason: str, message: str) -> AgentRun:
        start = run_started(self._facts(job))
        end = RunEnded(seq=1, elapsed_ms=0, outcome="error", reason=reason, turns=0)
        return AgentRun(
            events=(start, end), outcome="error", reason=reason, message=message, tools=self.tools()
        )

    def _proxy(
        self,
        job: AgentJob,
        place: _Place,
        token: str,
        holder: list[subprocess.Popen[bytes]],
        replayer: CassetteReplayer | None,
        wire: RunWire | None = None,
    ) -> RunProxy:
        """The run's proxy: it forwards requests carrying ``token`` upstream (or answers from the cassette),
        under the task's budget, and stops the agent in ``holder`` when a budget is spent."""
        return RunProxy(
            self.agent.api,
            self.upstream.base_url,
            self.upstream.key,
            job.task.budget,
            token=token,
            on_stop=lambda: _terminate(holder),
            replay=replayer,
            port=self.proxy_port,
            unix=None if place.socket is None else str(place.socket),
            rates=job.rates,
            faults=wire,
        )

    def _run_in(self, job: AgentJob, place: _Place) -> AgentRun:
        problem = prompt_problem(self.agent, job.task.prompt)
        if problem is not None:
            return self._failed(job, "agent_start", f"agent {self.agent.name}: {problem}")
        budget = job.task.budget
        holder: list[subprocess.Popen[bytes]] = []
        rules = (*job.rules, *place.rules, *noise_rules(self.agent))
        replayer = None
        if self.cassettes is not None:
            replayer = CassetteReplayer(self.cassettes[job.task.id], rules, place.workspace)
        token = f"alisio-run-{secrets.token_hex(16)}"  # the agent's only key, good for this run's proxy only
        wire = None if job.faults is None else RunWire(job.faults, f"{job.task.id}/{job.spec.repetition}")
        proxy = self._proxy(job, place, token, holder, replayer, wire)
        try:
            proxy.start()
        except OSError as error:
            proxy.close()
            where = "127.0.0.1" if place.socket is None else f"its unix socket {place.socket}"
            return self._failed(job, "proxy_bind", f"the run's proxy cannot listen on {where}: {error}")
        try:
            base_url = proxy.url if place.socket is None else f"http://127.0.0.1:{RELAY_PORT}"
            model = job.model or self.model
            inv = invocation(self.agent, self.binary, job.task.prompt, model, base_url, place.dirs, token)
            refusal = mcp_refusal(self.agent.kind, job.mcp_servers)
            if refusal is not None:
                return self._failed(job, "agent_start", f"agent {self.agent.name}: {refusal}")
            inv = _with_mcp(self.agent.kind, inv, job.mcp_servers, place.dirs.run)
            problem = argument_problem(self.agent, inv.argv)
            if problem is not None:
                why = f"agent {self.agent.name}: cannot start {inv.argv[0]}: {problem}"
                return self._failed(job, "agent_start", why)
            _prepare(place, job.task.prompt, inv, self._home_files(job))
            started = time.monotonic()
            try:
                end = self._supervise(job, inv, holder, budget.max_wall_ms, place)
            except (OSError, SandboxUnavailable) as error:
                why = (error.strerror or str(error)) if isinstance(error, OSError) else str(error)
                return self._failed(
                    job, "agent_start", f"agent {self.agent.name}: cannot start {inv.argv[0]}: {why}"
                )
            if place.socket is not None and end.exit_code == 127 and START_FAILED in end.stderr:
                said = end.stderr[end.stderr.index(START_FAILED) + len(START_FAILED) :].splitlines()[0]
                why = f"agent {self.agent.name}: cannot start {said} (in the sandbox)"
                return self._failed(job, "agent_start", why)
            end = msgspec.structs.replace(
                end,
                killed="budget" if proxy.stop is not None and end.killed is None else end.killed,
                elapsed_ms=round((time.monotonic() - started) * 1000),
            )
        finally:
            proxy.close()
        run = self._verdict(job, proxy, end, budget.max_wall_ms, rules)
        if wire is not None:
            run = _with_faults(run, wire)
        if self.recorded is not None:
            self.recorded[job.task.id] = self._cassette(job, proxy, rules)
        return run if replayer is None else _with_divergence(run, replayer)

    def _cassette(self, job: AgentJob, proxy: RunProxy, rules: Rules) -> AgentCassette:
        header = AgentCassetteHeader(
            format="agent-cassette/v1",
            suite_id=self.suite[0],
            suite_version=self.suite[1],
            task_id=job.task.id,
            agent=self.agent.name,
            kind=self.agent.kind,
            api=self.agent.api,
            model=job.model or self.model,
            provider=self.upstream.provider_id,
            faults=None if job.faults is None else spec_text(job.faults),
        )
        workspace = path_rules(str(job.workspace), str(job.workspace.resolve()))
        return recorded_cassette(header, proxy.calls, rules, workspace)

    def _verdict(
        self, job: AgentJob, proxy: RunProxy, end: AgentEnd, wall_ms: int | None, rules: Rules
    ) -> AgentRun:
        calls = tuple(_proxied(call, rules) for call in proxy.calls)
        hit = proxy.stop
        budget = (hit.budget, hit.limit, hit.value) if hit is not None else None
        denied = None  # what the sandbox refused, as the agent's log shows (its tools' output is in it)
        if job.sandbox is not None:
            denied = denial_in(f"{end.stdout}\n{end.stderr}", network=job.sandbox.network)
        facts = self._facts(job)
        verdict = run_events(facts, calls, end, tool_map(self.agent), budget, wall_ms, denied)
        return AgentRun(
            events=verdict.events,
            outcome=verdict.outcome,
            reason=verdict.reason,
            message=verdict.message,
            tools=self.tools(),
        )

    def _home_files(self, job: AgentJob) -> tuple[ContextOverlayFile, ...]:
        """The context's ``home`` files, placed where this agent kind looks (``context_home.home_path``)."""
        kind = self.agent.kind
        return tuple(dataclasses.replace(f, path=home_path(kind, f.path)) for f in job.context_home)

    def tools(self) -> AgentTools:
        return AgentTools(agent=self.agent.name, tools=lab_tools(self.agent))

    def _env(self, inv: Invocation, key: str | None) -> dict[str, str]:
        names = (*BASIC_ENV, *self.agent.env)
        env = {name: self.environ[name] for name in names if name in self.environ}
        if key:
            env = {name: value for name, value in env.items() if key not in value}
        env.update(NO_PROMPTS)
        env["TERM"] = "dumb"
        env.update(dict(inv.env))
        return env

    def _supervise(
        self,
        job: AgentJob,
        inv: Invocation,
        holder: list[subprocess.Popen[bytes]],
        wall_ms: int | None,
        place: _Place,
    ) -> AgentEnd:
        """Start the agent (in its sandbox, if any) and wait for it; raises ``OSError`` or
        ``SandboxUnavailable`` when it cannot start."""
        mark = new_mark()
        env = marked(self._env(inv, self.upstream.key), mark)
        run_dir = place.host_run if place.socket is None else place.host_run.parent
        with (
            _started(inv, env, job, place) as launch,
            (run_dir / "stdout").open("w+b") as out,
            (run_dir / "stderr").open("w+b") as err,
        ):
            process = launch.popen(
                cwd=job.workspace,
                env=env,
                stdin=subprocess.PIPE if inv.stdin is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
            holder.append(process)
            if inv.stdin is not None and process.stdin is not None:
                with contextlib.suppress(OSError):  # an agent that exits at once closes its end first
                    process.stdin.write(inv.stdin.encode())
                with contextlib.suppress(OSError):
                    process.stdin.close()
            group = supervise_group(
                process,
                (out, err),
                timeout_s=wall_ms / 1000 if wall_ms is not None else _NO_LIMIT_S,
                max_output_bytes=MAX_OUTPUT_BYTES,
                grace_s=2.0,
                mark=mark,
                sandboxed=place.socket is not None,
            )
            killed = {"timeout": "maxWallMs", "output": "output"}.get(group.killed or "")
            return AgentEnd(
                exit_code=None if group.killed else process.returncode,
                killed=killed,
                elapsed_ms=0,
                stdout=_read(out),
                stderr=_read(err),
                stopped=tuple(str(stopped) for stopped in group.stopped_marked),
            )


@dataclass(frozen=True)
class _Place:
    """Where one run's agent lives: its directories as it sees them, and where they are on the host."""

    dirs: RunDirs
    """As the agent sees them (in the sandbox: ``/home/sandbox/...`` and ``/workspace``)."""
    host_run: Path
    """The run directory on the host (``dirs.run`` itself, or the directory bound there)."""
    rules: Rules
    """The run directory's paths, as ``<run>`` (so a run fingerprints the same in or out of the sandbox)."""
    socket: Path | None = None
    """Sandboxed: the proxy's unix socket, bound into the sandbox; ``None``: the proxy listens on TCP."""

    @property
    def workspace(self) -> str:
        return self.dirs.workspace

    def host(self, path: str) -> Path:
        """The host path of a path under ``dirs.run``."""
        return self.host_run / Path(path).relative_to(self.dirs.run)


def _place(job: AgentJob, run_dir: Path, sock_dir: Path | None, with_files: bool) -> _Place:
    files = _files(job.workspace) if with_files else ()
    if job.sandbox is None or sock_dir is None:
        dirs = RunDirs(
            run=str(run_dir),
            workspace=str(job.workspace),
            prompt_file=str(run_dir / "prompt.txt"),
            files=files,
        )
        return _Place(dirs=dirs, host_run=run_dir, rules=run_dir_rules(str(run_dir), str(run_dir.resolve())))
    inside = RunDirs(
        run=SANDBOX_HOME, workspace=job.sandbox.workdir, prompt_file=f"{SANDBOX_HOME}/prompt.txt", files=files
    )
    host_run = run_dir / "agent"
    host_run.mkdir()
    rules = ((re.escape(SANDBOX_HOME) + r"\b", RUN_DIR),)  # as a path only
    return _Place(dirs=inside, host_run=host_run, rules=rules, socket=sock_dir / "p.sock")


_INSIDE_ENV: Final = frozenset({"HOME", "TMPDIR", "PWD", *HOST_PATH_VARIABLES})
"""The variables the sandbox sets or unsets itself: an agent's own values of them are set after."""


def _started(
    inv: Invocation, env: Mapping[str, str], job: AgentJob, place: _Place
) -> contextlib.AbstractContextManager[Launch]:
    """The command to start: the agent's own, or the agent in its sandbox with the relay to its proxy."""
    if job.sandbox is None or place.socket is None:
        return contextlib.nullcontext(Launch(list(inv.argv)))
    argv, read_only = agent_files(inv.argv, env.get("PATH", os.defpath), inv.host_paths)
    return agent_command(
        argv,
        sandbox=job.sandbox.sandbox,
        workspace=job.workspace,
        home=place.host_run,
        proxy=ProxyRoute(socket=place.socket, port=RELAY_PORT),
        network=job.sandbox.network,
        env=[(name, value) for name, value in inv.env if name in _INSIDE_ENV],
        read_only=read_only,
        workdir=job.sandbox.workdir,
    )


_MAX_FILES: Final = 200


def _files(workspace: Path) -> tuple[str, ...]:
    """The workspace's regular files, relative, sorted (no hidden or cache directories), at most 200."""
    found = []
    for path in workspace.rglob("*"):
        parts = path.relative_to(workspace).parts
        if path.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in parts):
            found.append(str(path.relative_to(workspace)))
    return tuple(sorted(found)[:_MAX_FILES])


def _with_mcp(kind: str, inv: Invocation, servers: Mapping[str, tuple[str, ...]], run: str) -> Invocation:
    """``inv`` with the run's MCP servers in the preset's own configuration, where its record says
    (``alisio.core.agents.mcp_config``), and what their commands need bound in the agent's sandbox."""
    place = mcp_place(kind)
    if not isinstance(place, McpPlace) or not servers:
        return inv
    binds = [bind.source for argv in servers.values() for bind in server_binds(argv)]
    return with_mcp_servers(place, inv, servers, run, binds)


def _read(file: IO[bytes]) -> str:
    return read_output(file, OUTPUT_CHARS, 8 * OUTPUT_CHARS + 8)


def _prepare(place: _Place, prompt: str, inv: Invocation, home: tuple[ContextOverlayFile, ...] = ()) -> None:
    """The run directory: HOME and XDG directories, the prompt file, a context's home files, then the
    preset's own files (which win over a context's: the agent always reaches the proxy)."""
    for name in ("home", "xdg-config", "xdg-data", "xdg-state", "xdg-cache"):
        (place.host_run / name).mkdir()
    place.host(place.dirs.prompt_file).write_text(prompt, encoding="utf-8")
    overlay(home, place.host_run)
    for path, text in inv.files:
        host = place.host(path)
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(text, encoding="utf-8")


def _with_divergence(run: AgentRun, replayer: CassetteReplayer) -> AgentRun:
    """A replayed run that asked something else than was recorded, or left recorded calls unplayed."""
    divergence = replayer.divergence or unplayed_divergence(replayer.cassette, len(replayer.played))
    if divergence is None:
        return run
    before = run.finish  # its faults, when it has some
    return dataclasses.replace(run, finish=lambda record: with_divergence(before(record), divergence))


def _with_faults(run: AgentRun, wire: RunWire) -> AgentRun:
    """The run with its injected faults (the calls the proxy saw, the faulted ones) added to its record."""
    faults = wire.recorded()
    before = run.finish
    return dataclasses.replace(
        run, finish=lambda record: before(msgspec.structs.replace(record, faults=faults))
    )


def _terminate(holder: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM the agent's group (the proxy refused a call past a budget); supervise_group reaps it."""
    for process in holder:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)


def _proxied(call: Call, rules: tuple[tuple[str, str], ...]) -> ProxiedCall:
    return ProxiedCall(
        index=call.index,
        started_ms=call.started_ms,
        duration_ms=call.duration_ms,
        exchange=call.exchange,
        problem=call.problem,
        fingerprint=request_fingerprint(call.request, rules),
        status=call.status,
        cut=call.cut,
        first_event_ms=call.first_event_ms,
    )
