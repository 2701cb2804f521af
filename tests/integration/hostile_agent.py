"""A hostile agent CLI for the proxy's adversarial tests (stdlib only): it tries what an agent should not manage.

    python3 hostile_agent.py MODE [ARG]

It talks Chat Completions (``$OPENAI_BASE_URL``, ``$OPENAI_API_KEY``; ``--api anthropic`` before MODE: Anthropic
Messages at ``$ANTHROPIC_BASE_URL`` with ``x-api-key``) and prints one JSON line of what happened, then exits 0:

- ``steal``: reads ``/proc/<parent>/environ`` and ``/proc/<parent>/mem``, and every other process's
  environment it can, looking for API keys (``*_API_KEY=`` values); prints the parent's outcomes and the
  values found (the test checks the real key is not among them). A child it starts first with
  ``CONTROL_API_KEY=control`` shows that the scan reads what it may;
- ``intruder``: starts a second client (another process, given only the proxy's URL) that sends a model call
  with no key and with a wrong one; prints their statuses and bodies;
- ``paths``: sends a model call with its own key to each request target of ``$TARGETS`` (JSON list of
  ``[method, target]``), byte for byte on a raw socket; prints each status as it comes (a JSON line
  ``{"METHOD TARGET": status}``: the lab may stop it at a budget before it is done);
- ``burst N``: sends N streamed model calls at once (``max_tokens`` 100, a padded prompt), reads each to its
  end; prints the statuses;
- ``abandon``: starts a streamed model call, reads its first event, and exits at once (the call still
  streaming at the provider).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

API = ["openai-chat"]
PAD = "pad " * 400
"""About 1,600 bytes of prompt: a request of about 2 KB."""


def _base() -> str:
    return os.environ["ANTHROPIC_BASE_URL" if API[0] == "anthropic" else "OPENAI_BASE_URL"].rstrip("/")


def _key_header(key: str) -> tuple[str, str]:
    return ("x-api-key", key) if API[0] == "anthropic" else ("authorization", f"Bearer {key}")


def _key() -> str:
    return os.environ["ANTHROPIC_API_KEY" if API[0] == "anthropic" else "OPENAI_API_KEY"]


def _model_path() -> str:
    return "/v1/messages" if API[0] == "anthropic" else "/chat/completions"


def _body(prompt: str, **extra: Any) -> bytes:
    return json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": prompt}], "stream": True} | extra
    ).encode()


def steal() -> dict[str, Any]:
    parent = os.getppid()
    outcome: dict[str, Any] = {"parent": parent}
    for part in ("environ", "mem"):
        try:
            with open(f"/proc/{parent}/{part}", "rb") as file:
                file.read(1) if part == "mem" else file.read()
            outcome[part] = "read"
        except OSError as error:
            outcome[part] = error.strerror or str(error)
    control = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], env={"CONTROL_API_KEY": "control"}
    )
    found: set[str] = set()
    readable = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as file:
                data = file.read()
        except OSError:
            continue
        readable += 1
        for item in data.split(b"\0"):
            name, _, value = item.partition(b"=")
            if name.endswith(b"_API_KEY") and value:
                found.add(value.decode("utf-8", "replace"))
    control.kill()
    control.wait()
    return outcome | {"readable": readable, "found": sorted(found)}


_SECOND_CLIENT = """
import json, sys, urllib.error, urllib.request
url, header, body = sys.argv[1], sys.argv[2], sys.argv[3].encode()
out = {}
for name, key in (("none", None), ("wrong", "sk-guessed-0000")):
    headers = {"content-type": "application/json"}
    if key:
        headers[header] = ("Bearer " + key) if header == "authorization" else key
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=30) as r:
            out[name] = [r.status, r.read().decode()]
    except urllib.error.HTTPError as error:
        out[name] = [error.code, error.read().decode()]
print(json.dumps(out))
"""


def intruder() -> dict[str, Any]:
    url = _base() + _model_path()
    header = _key_header("x")[0]
    done = subprocess.run(
        [sys.executable, "-c", _SECOND_CLIENT, url, header, _body("hi", max_tokens=10).decode()],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "")},
        check=False,
    )
    return json.loads(done.stdout or "{}") | {"stderr": done.stderr[-500:]}


def paths() -> dict[str, Any]:
    parsed = urllib.parse.urlsplit(_base())
    name, value = _key_header(_key())
    body = _body("hi", max_tokens=10)
    for method, target in json.loads(os.environ["TARGETS"]):
        request = (
            f"{method} {target} HTTP/1.1\r\nHost: x\r\n{name}: {value}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode()
        with socket.create_connection((parsed.hostname, parsed.port), timeout=30) as conn:
            conn.sendall(request + body)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        status = int(answer.split(b" ", 2)[1]) if answer else 0
        print(json.dumps({f"{method} {target}": status}), flush=True)
    return {}


def burst(count: int) -> dict[str, Any]:
    statuses: list[int] = []
    lock = threading.Lock()

    def one(number: int) -> None:
        request = urllib.request.Request(
            _base() + _model_path(),
            data=_body(f"{number} {PAD}", max_tokens=100),
            headers={"content-type": "application/json", _key_header(_key())[0]: _key_header(_key())[1]},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
                status = response.status
        except urllib.error.HTTPError as error:
            status = error.code
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"statuses": sorted(statuses)}


def abandon() -> None:
    request = urllib.request.Request(
        _base() + _model_path(),
        data=_body("hi", max_tokens=1000),
        headers={"content-type": "application/json", _key_header(_key())[0]: _key_header(_key())[1]},
    )
    response = urllib.request.urlopen(request, timeout=60)
    for raw in response:
        if raw.startswith(b"data:"):
            break
    print(json.dumps({"abandoned": True}), flush=True)
    os._exit(0)  # the call is still streaming at the provider


def main(argv: list[str]) -> int:
    if argv[:1] == ["--api"]:
        API[0], argv = argv[1], argv[2:]
    mode = argv[0]
    if mode == "abandon":
        abandon()
    if mode == "paths":
        paths()
        return 0
    result = burst(int(argv[1])) if mode == "burst" else {"steal": steal, "intruder": intruder}[mode]()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
