"""Run one alisio command against a scripted endpoint, both inside the caller's network namespace.

    python3 netns_driver.py LOG -- ALISIO ARGS...     ({base_url} in ARGS becomes the endpoint's)

``ALISIO_TEST_ENDPOINT_COMMAND`` in the environment, when set, is the shell command the endpoint's tool call
runs instead of the sed that fixes fix-add (an agent that does the wrong thing, or tampers).

The real-agent tests start it under ``unshare -n`` (loopback only, brought up first), so an agent CLI can
reach nothing but the endpoint. LOG gets ``{"rc", "stdout", "stderr", "calls": [...]}``: the command's result
and the endpoint's own log of model calls (path, model, whether tools were offered, the usage it answered,
the request body).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from alisio.shell.agents.mock_endpoint import MockEndpoint

USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
"""What the mock endpoint's default reports for each call (``alisio.core.agents.mock.DEFAULT_USAGE``)."""


def main(argv: list[str]) -> int:
    log, separator, *command = argv
    assert separator == "--"
    shell = os.environ.get("ALISIO_TEST_ENDPOINT_COMMAND")
    with MockEndpoint(**({"command": shell} if shell else {})) as endpoint:
        args = [arg.replace("{base_url}", endpoint.base_url) for arg in command]
        done = subprocess.run(
            args, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL, timeout=600
        )
        calls = [
            {
                "path": r.path,
                "model": r.json().get("model"),
                "tools": bool(r.json().get("tools")),
                "usage": USAGE,
                "body": r.body.decode("utf-8", "replace"),
            }
            for r in endpoint.model_calls
        ]
    Path(log).write_text(
        json.dumps({"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "calls": calls})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
