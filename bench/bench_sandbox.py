"""What ``--sandbox bwrap`` costs (docs/sandbox.md, "Performance").

1. One bash call: ``run_command("true")`` (what the bash tool runs) with and without the sandbox, 200 of each,
   interleaved so both see the same machine; the extra cost is the difference of the medians.
   Target: at most 10 ms.
2. The 50-run scripted job (bench/suites/scripted-50: 10 tasks x k = 5, each run ending with a
   ``python3 check.py`` verifier) with and without ``--sandbox bwrap``, ``--jobs 1``, three rounds
   alternating; the ratio of the medians. Target: at most 1.3x. The CPU time of each side (alisio and every
   process it ran) is printed too: unlike the wall time, it does not grow with the machine's load.

3. An external agent run: smoke-coding's fix-add by the test agent (tests/integration/fake_agent.py, 2 model
   calls against the scripted endpoint), k = 10 at ``--jobs 1``, with and without ``--sandbox bwrap``, three
   rounds alternating; the extra wall time per run (bwrap, the relay's start, the unix-socket hop). With
   OpenCode installed (``make agents``), the same for it at k = 2. Reported (no target).

Both sides get the same PATH with the system's ``/usr/bin`` first, so ``python3`` is the same interpreter in
and out of the sandbox (a version manager's shim outside, which the sandbox cannot see, would otherwise make
the unsandboxed side slower). Needs bubblewrap. Run by hand (``make bench``).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alisio.core.harness.sandbox import SandboxLimits
from alisio.shell.agents.mock_endpoint import MockEndpoint
from alisio.shell.agents.setup import agents_bin
from alisio.shell.harness.tools.bash import run_command
from alisio.shell.sandbox.bwrap import SandboxRun, probe_sandbox

HERE = Path(__file__).resolve().parent
ALISIO = Path(sys.executable).with_name("alisio")
CALLS = 200
ROUNDS = 3


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    (home / "config").mkdir(exist_ok=True)
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    env["PATH"] = f"/usr/bin:/bin:{env.get('PATH', '')}"
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def per_call(home: Path) -> bool:
    found = probe_sandbox(SandboxLimits(), os.environ)
    if isinstance(found, str):
        raise SystemExit(found)
    workspace = home / "ws"
    workspace.mkdir()
    sandbox = SandboxRun(sandbox=found, workspace=str(workspace.resolve()))
    env = _env(home)
    plain: list[float] = []
    boxed: list[float] = []
    cpu = {"plain": 0.0, "boxed": 0.0}
    for _ in range(CALLS):
        for box, times, side in ((None, plain, "plain"), (sandbox, boxed, "boxed")):
            before = _children_cpu()
            start = time.perf_counter()
            result = run_command("true", cwd=str(workspace), env=env, timeout_s=30, sandbox=box)
            times.append(time.perf_counter() - start)
            cpu[side] += _children_cpu() - before
            assert result.exit_code == 0, result.output
    extra = (statistics.median(boxed) - statistics.median(plain)) * 1000
    kinds = [name for name, base in (("pids", found.pids_cgroup), ("memory", found.memory_cgroup)) if base]
    cgroup = f"{' and '.join(kinds)} cgroups" if kinds else "no cgroup"
    print(
        f"one bash call, median of {CALLS}: unsandboxed {statistics.median(plain) * 1000:.1f} ms, sandboxed "
        f"{statistics.median(boxed) * 1000:.1f} ms ({cgroup}): {extra:.1f} ms extra "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    print(
        f"CPU time of the processes per call (user + system): unsandboxed {cpu['plain'] / CALLS * 1000:.1f} ms, "
        f"sandboxed {cpu['boxed'] / CALLS * 1000:.1f} ms"
    )
    print(f"target: at most 10 ms extra -> {'ok' if extra <= 10 else 'MISSED'}")
    return extra <= 10


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """The wall time and the CPU time (user + system, alisio and every process it waited for) of a command."""
    before = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run([str(ALISIO), *args], capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"alisio {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, _children_cpu() - before


def job(home: Path) -> bool:
    suite = HERE / "suites" / "scripted-50"
    base = ["eval", "run", "scripted-50", "--suite-dir", str(HERE / "suites"), "--yes", "-q", "-k", "5",
            "--allow-write", "--script", str(suite / "scripts" / "summarize.json"), "-j", "1"]  # fmt: skip
    times: dict[str, list[float]] = {"none": [], "bwrap": []}
    cpu: dict[str, list[float]] = {"none": [], "bwrap": []}
    for round_ in range(ROUNDS):
        for kind in ("none", "bwrap") if round_ % 2 == 0 else ("bwrap", "none"):
            out = home / f"job-{kind}-{round_}"
            wall, used = _timed([*base, "--sandbox", kind, "--out", str(out)], _env(home))
            times[kind].append(wall)
            cpu[kind].append(used)
    plain, boxed = statistics.median(times["none"]), statistics.median(times["bwrap"])
    ratio = boxed / plain
    print(
        f"scripted-50 (50 runs, --jobs 1), median of {ROUNDS}: --sandbox none {plain:.2f} s, --sandbox bwrap "
        f"{boxed:.2f} s: {ratio:.2f}x (load average {os.getloadavg()[0]:.1f})"
    )
    plain_cpu, boxed_cpu = statistics.median(cpu["none"]), statistics.median(cpu["bwrap"])
    print(
        f"  CPU time (user + system, every process): {plain_cpu:.2f} s, {boxed_cpu:.2f} s: "
        f"{boxed_cpu / plain_cpu:.2f}x"
    )
    print(f"target: at most 1.3x -> {'ok' if ratio <= 1.3 else 'MISSED'}")
    return ratio <= 1.3


def _agent_config(home: Path) -> None:
    fake = HERE.parent / "tests" / "integration" / "fake_agent.py"
    command = f'["python3", "{fake}", "--prompt-file", "{{prompt_file}}"]'
    text = f'[provider]\nmodel = "m"\n\n[agents.fake]\nkind = "command"\ncommand = {command}\n'
    (home / "config").mkdir(exist_ok=True)
    (home / "config" / "config.toml").write_text(text + '\n[agents.oc]\nkind = "opencode"\n')


def agent_runs(home: Path) -> None:
    _agent_config(home)
    extra = agents_bin()
    found = shutil.which("opencode", path=f"{os.environ.get('PATH', '')}:{extra}") if extra else None
    with MockEndpoint() as endpoint:
        for agent, k in (("fake", 10), *((("oc", 2),) if found else ())):
            base = ["eval", "run", "smoke-coding", "--tasks", "fix-add", "--agent", agent, "--yes", "-q"]
            base += [
                "-k",
                str(k),
                "-j",
                "1",
                "--allow-write",
                "--allow-process",
                "--base-url",
                endpoint.base_url,
            ]
            times: dict[str, list[float]] = {"none": [], "bwrap": []}
            for round_ in range(ROUNDS):
                for kind in ("none", "bwrap") if round_ % 2 == 0 else ("bwrap", "none"):
                    out = home / f"agent-{agent}-{kind}-{round_}"
                    wall, _ = _timed([*base, "--sandbox", kind, "--out", str(out)], _env(home))
                    times[kind].append(wall / k)
            plain, boxed = statistics.median(times["none"]), statistics.median(times["bwrap"])
            print(
                f"one {agent} agent run on fix-add (k = {k}, --jobs 1), median of {ROUNDS}: --sandbox none "
                f"{plain * 1000:.0f} ms, --sandbox bwrap {boxed * 1000:.0f} ms per run: "
                f"{(boxed - plain) * 1000:+.0f} ms (load average {os.getloadavg()[0]:.1f})"
            )


def main() -> int:
    with tempfile.TemporaryDirectory() as temp:
        home = Path(temp)
        results = [per_call(home)]
        if "--per-call" not in sys.argv:
            results.append(job(home))
            agent_runs(home)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
