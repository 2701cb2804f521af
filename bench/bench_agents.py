"""External agents (issue 20): the proxy's overhead, and an OpenCode job against its shell-loop floor.

1. Proxy overhead per model call: a local Chat Completions endpoint that answers at once (a 3-chunk stream),
   100 streaming calls straight to it and 100 through a ``RunProxy`` (one keep-alive client each way); the
   overhead is the difference of the medians. Target: at most 5 ms.
2. OpenCode: smoke-coding's fix-add, 20 runs at ``--jobs 4`` through ``alisio eval run --agent``, next to the
   floor: the same 20 OpenCode invocations (a fresh fixture copy and fresh HOME/XDG directories each, as the
   lab gives them) in a shell loop, one after another, on the same scripted endpoint. Reported: the ratio.
   Skipped when OpenCode is not installed (``make agents``). ``--runs N`` changes the 20.

Run by hand (``make bench``): timings on a shared machine are too noisy for a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alisio.core.harness.budget import RunBudget  # noqa: E402
from alisio.shell.agents.mock_endpoint import MockEndpoint  # noqa: E402
from alisio.shell.agents.proxy import RunProxy  # noqa: E402
from alisio.shell.agents.setup import agents_bin  # noqa: E402

ALISIO = Path(sys.executable).with_name("alisio")
FIXTURE = ROOT / "suites" / "smoke-coding" / "fixtures" / "fix-add"
BODY = json.dumps(
    {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}], "tools": []}
).encode()


TOKEN = "alisio-run-bench"


def _timed_calls(client: httpx.Client, url: str, n: int) -> list[float]:
    times = []
    headers = {"content-type": "application/json", "authorization": f"Bearer {TOKEN}"}
    for _ in range(n):
        start = time.perf_counter()
        with client.stream("POST", url, content=BODY, headers=headers) as response:
            for _chunk in response.iter_bytes():
                pass
        times.append(time.perf_counter() - start)
    return times


def proxy_overhead(n: int = 100) -> None:
    budget = RunBudget(max_turns=None, max_wall_ms=None, max_tokens=None, max_tool_calls=None)
    with MockEndpoint() as endpoint, httpx.Client() as client:
        proxy = RunProxy("openai-chat", endpoint.base_url, "key", budget, token=TOKEN).start()
        try:
            _timed_calls(client, endpoint.base_url + "/chat/completions", 10)  # warm up both paths
            _timed_calls(client, proxy.url + "/v1/chat/completions", 10)
            direct = _timed_calls(client, endpoint.base_url + "/chat/completions", n)
            proxied = _timed_calls(client, proxy.url + "/v1/chat/completions", n)
        finally:
            proxy.close()
    overhead = (statistics.median(proxied) - statistics.median(direct)) * 1000
    print(f"proxy: {n} streaming calls, median direct {statistics.median(direct) * 1000:.2f} ms, "
          f"through the proxy {statistics.median(proxied) * 1000:.2f} ms: overhead {overhead:.2f} ms "
          f"(target <= 5 ms: {'met' if overhead <= 5 else 'missed'})")  # fmt: skip


def _opencode_loop(binary: str, base_url: str, runs: int, work: Path) -> float:
    """The floor: the same OpenCode invocations one after another, each in a fresh copy and fresh dirs."""
    config = {"provider": {"local": {"npm": "@ai-sdk/openai-compatible", "name": "local",
              "options": {"baseURL": base_url, "apiKey": "dummy"}, "models": {"m": {}}}},
              "model": "local/m", "share": "disabled", "autoupdate": False}  # fmt: skip
    script = work / "loop.sh"
    script.write_text(
        f"""set -e
for i in $(seq {runs}); do
  run=$(mktemp -d); cp -r {FIXTURE} $run/ws; mkdir $run/home $run/data $run/state $run/cache $run/config
  echo '{json.dumps(config)}' > $run/opencode.json
  (cd $run/ws && HOME=$run/home XDG_DATA_HOME=$run/data XDG_STATE_HOME=$run/state XDG_CACHE_HOME=$run/cache \\
   XDG_CONFIG_HOME=$run/config OPENCODE_CONFIG=$run/opencode.json OPENCODE_DISABLE_AUTOUPDATE=1 \\
   OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1 \\
   {binary} run --format json -m local/m "Fix add in src/calc.py" </dev/null >/dev/null)
  rm -rf $run
done
"""
    )
    start = time.perf_counter()
    subprocess.run(["bash", str(script)], check=True)
    return time.perf_counter() - start


def opencode_job(runs: int) -> None:
    binary = shutil.which("opencode", path=f"{os.environ.get('PATH', '')}:{agents_bin()}")
    if binary is None:
        print("opencode: skipped (not installed: make agents)")
        return
    with tempfile.TemporaryDirectory() as tmp, MockEndpoint() as endpoint:
        work = Path(tmp)
        (work / "config").mkdir()
        (work / "config" / "config.toml").write_text(
            '[provider]\nmodel = "m"\n\n[agents.oc]\nkind = "opencode"\n'
        )
        env = {
            **os.environ,
            "ALISIO_CONFIG_HOME": str(work / "config"),
            "ALISIO_DATA_HOME": str(work / "data"),
        }
        start = time.perf_counter()
        done = subprocess.run(
            [str(ALISIO), "eval", "run", "smoke-coding", "--tasks", "fix-add", "--k", str(runs), "--agent", "oc",
             "--base-url", endpoint.base_url, "--allow-write", "--allow-process", "--jobs", "4", "--quiet",
             "--out", str(work / "out")],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        lab = time.perf_counter() - start
        if done.returncode != 0:
            print(f"opencode: the lab's job failed: {done.stderr[-500:]}")
            return
        floor = _opencode_loop(binary, endpoint.base_url, runs, work)
    print(f"opencode: {runs} runs of fix-add, alisio --jobs 4 {lab:.1f} s, shell loop (the floor) {floor:.1f} s: "
          f"ratio {lab / floor:.2f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", choices=("proxy", "opencode"))
    args = parser.parse_args()
    if args.only in (None, "proxy"):
        proxy_overhead()
    if args.only in (None, "opencode"):
        opencode_job(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
