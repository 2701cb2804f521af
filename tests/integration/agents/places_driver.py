"""Start each named preset's real CLI once, as its record starts it, with a marker instructions file and a
marker skill at its record's ``places``; log whether its model calls carried them.

    python3 places_driver.py LOG PRESET...

The test runs it under ``unshare -n`` (loopback only, brought up first) against the scripted endpoint it
serves here, so an agent can reach nothing but the endpoint. LOG gets ``{PRESET: {"rc", "calls",
"instructions", "skills", "stderr"}}``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from alisio.core.agents.config import parse_external
from alisio.core.agents.external import invocation
from alisio.core.agents.presets import PRESETS, Preset, RunDirs
from alisio.shell.agents.mock_endpoint import MockEndpoint
from alisio.shell.agents.setup import agents_bin

INSTRUCTIONS = "MARKER-INSTRUCTIONS-7731: answer tersely."
SKILL = "MARKER-SKILL-7732 greets the user"
FIXTURE = Path(__file__).resolve().parents[3] / "suites" / "smoke-coding" / "fixtures" / "fix-add"
RUN_DIRS = ("home", "xdg-config", "xdg-data", "xdg-state", "xdg-cache")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _one(preset: Preset, root: Path) -> dict[str, object]:
    run, workspace = root / "run", root / "workspace"
    shutil.copytree(FIXTURE, workspace)
    for name in RUN_DIRS:
        (run / name).mkdir(parents=True)
    places = preset.places
    if places.instructions is not None:
        _write(run / places.instructions, INSTRUCTIONS + "\n")
    if places.skills is not None:
        _write(
            run / places.skills / "greet" / "SKILL.md", f"---\nname: greet\ndescription: {SKILL}\n---\nHi.\n"
        )
    agent = parse_external("x", {"kind": preset.name}, "config.toml").unwrap()
    binary = str((agents_bin() or Path("/nonexistent")) / preset.binary)
    files = ("src/calc.py",)
    dirs = RunDirs(run=str(run), workspace=str(workspace), prompt_file=str(run / "prompt.txt"), files=files)
    with MockEndpoint() as endpoint:
        base = endpoint.base_url.removesuffix("/v1")
        inv = invocation(agent, binary, "Fix add in src/calc.py.", "m", base, dirs, "run-token")
        for path, text in inv.files:
            _write(Path(path), text)
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", **dict(inv.env)}
        done = subprocess.run(
            list(inv.argv), cwd=workspace, env=env, input=(inv.stdin or "").encode(), capture_output=True,
            timeout=300, check=False,
        )  # fmt: skip
        bodies = [request.body.decode("utf-8", "replace") for request in endpoint.model_calls]
    return {
        "rc": done.returncode,
        "calls": len(bodies),
        "instructions": any(INSTRUCTIONS in body for body in bodies),
        "skills": any(SKILL in body for body in bodies),
        "stderr": done.stderr.decode("utf-8", "replace")[-2000:],
    }


def main(argv: list[str]) -> int:
    log, *names = argv
    results = {}
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"alisio-places-{name}-") as root:
            results[name] = _one(PRESETS[name], Path(root))  # type: ignore[index]
    Path(log).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
