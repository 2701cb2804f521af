"""The command's fixed cost and the cost per run, measured end to end (issue 21's targets), optionally side by
side with another checkout of alisio.

- ``alisio --help``: at most 0.25 s;
- ``alisio eval run tool-sequences --tasks read-edit-config --mode replay``: one replayed task, at most 0.6 s;
- ``alisio eval ci`` over the bundled cassettes: at most 1.0 s;
- bench/suites/scripted-50 (50 scripted runs, each copying its fixture and running ``python3 check.py``):
  at most 1.5x the floor at ``--jobs 1``, faster than the floor at ``--jobs 2``. The floor is a shell loop
  that copies the fixture to a fresh temporary directory and runs ``python3 check.py`` there, 50 times.

Every command runs with this venv's ``bin`` first on PATH, as in an activated venv, so the floor's
``python3`` and the verifiers' are the same interpreter (a pyenv shim costs ~140 ms a call and would make the
floor slow). ``--base DIR`` also runs a checkout's code (``DIR/src`` on PYTHONPATH, same interpreter),
interleaving the two sides round by round; the medians of wall and CPU time (user + system, the command and
its children) are printed. Each side's ``src`` is compiled to bytecode first, as ``make`` does
(``--no-compile``: not, and PYTHONDONTWRITEBYTECODE set, so every command compiles alisio's modules again).
Run by hand: a shared machine is noisy; the CPU times are far less so.

    .venv/bin/python bench/bench_commands.py --rounds 5 [--base ../alisio-main] [--no-compile]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent
ALISIO = BIN / "alisio"
SCRIPTED = HERE / "suites" / "scripted-50"
TARGETS = {"help": 0.25, "run-1-replayed": 0.6, "eval-ci": 1.0}


def _env(home: Path, base: Path | None, compiled: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "PYTHONPATH")}
    if not compiled:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    (home / "config").mkdir(parents=True, exist_ok=True)
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    if base is not None:
        env["PYTHONPATH"] = str(base / "src")
    return env


CPU: list[float] = []
"""The CPU seconds (user + system, the command and its children) of each ``_timed`` call, in order: on a
loaded machine the wall time also holds the waits for a core; this does not."""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)) -> float:
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    elapsed = time.perf_counter() - start
    CPU.append(_cpu() - cpu)
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def _commands(checkout: Path) -> dict[str, Callable[[Path, dict[str, str]], float]]:
    """The measured commands; the bundled suites are the checkout's own (its suites/)."""
    replay = ["eval", "run", "tool-sequences", "--tasks", "read-edit-config", "--mode", "replay", "-q"]
    replay += ["--allow-write", "--allow-process"]
    scripted = ["eval", "run", "scripted-50", "--suite-dir", str(HERE / "suites"), "--yes", "-q", "-k", "5"]
    scripted += ["--allow-write", "--script", str(SCRIPTED / "scripts" / "summarize.json")]

    def command(*args: str, out: str | None = None) -> Callable[[Path, dict[str, str]], float]:
        def run(home: Path, env: dict[str, str]) -> float:
            extra: list[str] = []
            if out is not None:
                shutil.rmtree(home / out, ignore_errors=True)
                extra = ["--out", str(home / out)]
            return _timed([str(ALISIO), *args, *extra], env, checkout)

        return run

    return {
        "help": command("--help"),
        "run-1-replayed": command(*replay, out="one"),
        "eval-ci": command("eval", "ci", out="ci"),
        "jobs-1": command(*scripted, "-j", "1", out="s1"),
        "jobs-2": command(*scripted, "-j", "2", out="s2"),
    }


def _floor(env: dict[str, str]) -> float:
    loop = (
        'for i in $(seq 50); do d=$(mktemp -d); cp -r "$1"/. "$d"; (cd "$d" && python3 check.py >/dev/null); '
        'rm -rf "$d"; done'
    )
    return _timed(["bash", "-c", loop, "floor", str(SCRIPTED / "fixtures" / "notes")], env, ROOT)


def _prepare(sides: dict[str, Path | None], home: Path, compiled: bool) -> None:
    """Compile (or clear) each side's bytecode, and check that each side runs its own checkout's code."""
    for name, path in sides.items():
        src = (path or ROOT) / "src"
        if compiled:
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(src)], check=True, capture_output=True
            )
        else:
            for cached in src.rglob("__pycache__"):
                shutil.rmtree(cached, ignore_errors=True)
        where = "import alisio.shell.cli.main as m; print(m.__file__)"
        found = subprocess.run(
            [sys.executable, "-c", where],
            env=_env(home / name, path, compiled),
            capture_output=True,
            text=True,
        ).stdout.strip()
        if not Path(found).resolve().is_relative_to(src.resolve()):
            raise SystemExit(f"{name}: alisio is imported from {found}, not from {src}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", type=Path, help="another checkout of alisio, measured side by side")
    parser.add_argument(
        "--no-compile", action="store_true", help="no bytecode: every command compiles alisio"
    )
    options = parser.parse_args()
    compiled = not options.no_compile
    start_load = os.getloadavg()[0]
    sides: dict[str, Path | None] = {"this": None}
    if options.base is not None:
        sides["base"] = options.base.resolve()
    figures: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    cpu: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    with tempfile.TemporaryDirectory(prefix="alisio-bench-") as temp:
        home = Path(temp)
        _prepare(sides, home, compiled)
        for name, path in sides.items():  # warm-up: the file system's caches filled
            env = _env(home / name, path, compiled)
            for run in _commands(path or ROOT).values():
                run(home / name, env)
        for _ in range(options.rounds):
            for name, path in sides.items():
                env = _env(home / name, path, compiled)
                figures[name].setdefault("floor", []).append(_floor(env))
                cpu[name].setdefault("floor", []).append(CPU[-1])
                for command, run in _commands(path or ROOT).items():
                    figures[name].setdefault(command, []).append(run(home / name, env))
                    cpu[name].setdefault(command, []).append(CPU[-1])
    load = f"{start_load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    bytecode = "compiled bytecode" if compiled else "no bytecode"
    print(f"median of {options.rounds} interleaved rounds, {bytecode} (load average {load}), seconds")
    print(f"{'':16}" + "".join(f"{name + ' wall':>12}{name + ' cpu':>12}" for name in sides) + "   target")
    for command in ("help", "run-1-replayed", "eval-ci", "floor", "jobs-1", "jobs-2"):
        row = [(statistics.median(figures[n][command]), statistics.median(cpu[n][command])) for n in sides]
        target = TARGETS.get(command)
        note = f"   <= {target:.2f}" if target else ""
        print(f"{command:16}" + "".join(f"{wall:12.2f}{used:12.2f}" for wall, used in row) + note)
    for name in sides:
        floor = statistics.median(figures[name]["floor"])
        one, two = (statistics.median(figures[name][f"jobs-{j}"]) / floor for j in (1, 2))
        print(f"{name}: --jobs 1 {one:.2f}x the floor (target <= 1.5x), --jobs 2 {two:.2f}x (target < 1.0x)")
    print("every figure (wall, cpu):", json.dumps({n: {"wall": figures[n], "cpu": cpu[n]} for n in sides}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
