"""A small deterministic agent CLI for the external-agent tests (stdlib only).

    python3 fake_agent.py [--mode MODE] [--model NAME] [--exit N] [--prompt-file FILE] [PROMPT]

It reads the prompt from PROMPT, from --prompt-file, or from stdin, and talks Chat Completions (streamed) to
``$OPENAI_BASE_URL`` with ``$OPENAI_API_KEY``, offering one tool, ``bash``, which it runs in its working
directory; it stops at the first answer without a tool call and prints it. Modes:
- ``normal`` (default): the loop above;
- ``no-model``: prints the prompt's length and exits, never calling the model;
- ``hang``: starts a detached grandchild (``setsid sleep``), then sleeps for ever;
- ``huge``: prints 3 MB to stdout and 1 MB to stderr, then runs the loop;
- ``env``: prints its environment as JSON (what the lab let through), then runs the loop.
``--exit N`` exits N after the loop (a non-zero agent exit); a model error exits 3, printing it.
``--version`` prints ``fake-agent 1.2.3``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "run a shell command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]


MODEL = ["m"]


def _stream(messages: list[dict[str, Any]]) -> dict[str, Any]:
    body = json.dumps(
        {
            "model": MODEL[0],
            "messages": messages,
            "tools": TOOLS,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=body,
        headers={
            "content-type": "application/json",
            "authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
        },
    )
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    with urllib.request.urlopen(request, timeout=60) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            for choice in chunk.get("choices", []):
                delta = choice.get("delta", {})
                text.append(delta.get("content") or "")
                for call in delta.get("tool_calls") or []:
                    slot = calls.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call.get("id") or slot["id"]
                    function = call.get("function") or {}
                    slot["name"] = function.get("name") or slot["name"]
                    slot["arguments"] += function.get("arguments") or ""
    return {"content": "".join(text), "tool_calls": list(calls.values())}


def _loop(prompt: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a test agent."},
        {"role": "user", "content": prompt},
    ]
    while True:
        answer = _stream(messages)
        calls = answer["tool_calls"]
        if not calls:
            return str(answer["content"])
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in calls
                ],
            }
        )
        for call in calls:
            command = json.loads(call["arguments"])["command"]
            done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": done.stdout + done.stderr or "(no output)",
                }
            )


def main(argv: list[str]) -> int:
    if argv == ["--version"]:
        print("fake-agent 1.2.3")
        return 0
    mode, code, prompt = "normal", 0, None
    args = iter(argv)
    for arg in args:
        if arg == "--mode":
            mode = next(args)
        elif arg == "--model":
            MODEL[0] = next(args)
        elif arg == "--exit":
            code = int(next(args))
        elif arg == "--prompt-file":
            with open(next(args), encoding="utf-8") as file:
                prompt = file.read()
        else:
            prompt = arg
    if prompt is None:
        prompt = sys.stdin.read()
    if mode == "no-model":
        print(f"prompt of {len(prompt)} characters; not calling the model")
        return code
    if mode == "hang":
        subprocess.Popen(["setsid", "sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(300)
    if mode == "huge":
        sys.stdout.write("x" * (3 << 20) + "\n")
        sys.stderr.write("y" * (1 << 20) + "\n")
    if mode == "env":
        print(json.dumps(dict(os.environ)))
    try:
        final = _loop(prompt)
    except urllib.error.HTTPError as error:
        print(f"model error: HTTP {error.code}: {error.read().decode()}", file=sys.stderr)
        return 3
    print(final)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
