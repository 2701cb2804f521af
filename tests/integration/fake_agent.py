"""A small deterministic agent CLI for the external-agent tests (stdlib only).

    python3 fake_agent.py [--api API] [--mode MODE] [--model NAME] [--retries N] [--exit N] [--prompt-file FILE] [PROMPT]

It reads the prompt from PROMPT, from --prompt-file, or from stdin, and talks ``--api`` (streamed) to the
proxy: ``openai-chat`` (the default; ``$OPENAI_BASE_URL/chat/completions``), ``openai-responses``
(``$OPENAI_BASE_URL/responses``), ``anthropic`` (``$ANTHROPIC_BASE_URL/v1/messages``, key in
``x-api-key``) or ``gemini`` (``$GOOGLE_GEMINI_BASE_URL/v1beta/models/MODEL:streamGenerateContent?alt=sse``,
key in ``x-goog-api-key``, the model only in the path). It offers one tool, ``bash``, which it runs in its working directory, sends each result back
in the api's own shape, and stops at the first answer without a tool call and prints it. Modes:
- ``normal`` (default): the loop above;
- ``no-model``: prints the prompt's length and exits, never calling the model;
- ``hang``: sleeps for ever (``HANG_WRAPPER`` starts its detached grandchild first, see there);
- ``huge``: prints 3 MB to stdout and 1 MB to stderr, then runs the loop;
- ``env``: prints its environment as JSON (what the lab let through), then runs the loop;
- ``escape``: tries to connect to each port of ``$ESCAPE_PORTS`` on 127.0.0.1 and to write each file of
  ``$ESCAPE_PATHS`` (comma-separated), prints what happened, where it is and what it is, as JSON, then runs
  the loop;
- ``read``: tries to read the file its prompt names and the one its model names (each a path), prints what
  it read (or the error) as JSON, then runs the loop.
``--sleep S`` sleeps S seconds before anything else (a run that is in flight when its command is killed).
``--retries N`` retries a model call up to N times, as real CLIs do: after a 429, 500, 502 or 503 (waiting its
``retry-after``, at most 5 s), a stream that broke or a read that timed out (60 s); each retry is a new
request.
``--exit N`` exits N after the loop (a non-zero agent exit); a model error exits 3, printing it.
``--version`` prints ``fake-agent 1.2.3``.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

HANG_WRAPPER = (
    "trap '' TERM; setsid sleep 300 </dev/null >/dev/null 2>&1 & "
    'until [ "$(cat /proc/$!/comm 2>/dev/null)" = sleep ]; do :; done; trap - TERM; exec "$@"'
)
"""``sh -c HANG_WRAPPER sh python3 fake_agent.py --mode hang ...``: the hung agent with a detached grandchild
that exists before the agent can be stopped. The grandchild (``setsid sleep``, a session of its own, so only
the run's process mark finds it) is started by ``sh`` and waited for until it runs ``sleep`` (``setsid`` execs
it in the same pid), with SIGTERM ignored meanwhile: a slow Python start-up on a loaded machine can no longer
make the lab stop the agent before its grandchild exists. A SIGTERM that came meanwhile is lost, and the
agent is SIGKILLed after the lab's grace period instead."""

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
API = ["openai-chat"]
RETRIES = [0]
_RETRIED = (429, 500, 502, 503)


def _post(
    path_env: str, path: str, key_header: tuple[str, str], body: dict[str, Any]
) -> list[tuple[str, Any]]:
    """POST ``body`` and read the SSE answer, retried up to ``RETRIES`` times (see the module docstring)."""
    for attempt in range(RETRIES[0] + 1):
        last = attempt == RETRIES[0]
        try:
            return _post_once(path_env, path, key_header, body)
        except urllib.error.HTTPError as error:
            if last or error.code not in _RETRIED:
                raise
            error.read()
            time.sleep(min(float(error.headers.get("retry-after") or 0), 5.0))
        except (OSError, http.client.HTTPException):  # a broken stream, a read that timed out
            if last:
                raise
    raise AssertionError("unreachable")


def _post_once(
    path_env: str, path: str, key_header: tuple[str, str], body: dict[str, Any]
) -> list[tuple[str, Any]]:
    """POST ``body`` and read the SSE answer: its ``(event, data)`` pairs (``[DONE]`` left out)."""
    request = urllib.request.Request(
        os.environ[path_env].rstrip("/") + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", key_header[0]: key_header[1]},
    )
    events: list[tuple[str, Any]] = []
    name = "message"
    with urllib.request.urlopen(request, timeout=60) as response:
        for raw in response:
            if not raw.endswith(b"\n"):  # the stream broke mid-line (its last bytes before the break)
                raise http.client.IncompleteRead(raw)
            line = raw.decode().strip()
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:") and line != "data: [DONE]":
                events.append((name, json.loads(line[5:])))
                name = "message"
    return events


def _chat_call(messages: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"model": MODEL[0], "messages": messages, "tools": TOOLS, "stream": True}
    key = ("authorization", f"Bearer {os.environ['OPENAI_API_KEY']}")
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    for _, chunk in _post(
        "OPENAI_BASE_URL", "/chat/completions", key, body | {"stream_options": {"include_usage": True}}
    ):
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


def _chat_turn(messages: list[dict[str, Any]], calls: list[dict[str, str]], outputs: list[str]) -> None:
    shaped = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls
    ]
    messages.append({"role": "assistant", "content": None, "tool_calls": shaped})
    messages += [
        {"role": "tool", "tool_call_id": c["id"], "content": out}
        for c, out in zip(calls, outputs, strict=True)
    ]


def _responses_call(items: list[dict[str, Any]]) -> dict[str, Any]:
    tools = [{"type": "function", **TOOLS[0]["function"]}]
    body = {
        "model": MODEL[0],
        "instructions": "You are a test agent.",
        "input": items,
        "tools": tools,
        "stream": True,
    }
    key = ("authorization", f"Bearer {os.environ['OPENAI_API_KEY']}")
    text: list[str] = []
    calls: list[dict[str, str]] = []
    for _, event in _post("OPENAI_BASE_URL", "/responses", key, body):
        item = event.get("item") or {}
        if event.get("type") != "response.output_item.done":
            continue
        if item.get("type") == "function_call":
            calls.append({"id": item["call_id"], "name": item["name"], "arguments": item["arguments"]})
        elif item.get("type") == "message":
            text += [part.get("text", "") for part in item.get("content", [])]
    return {"content": "".join(text), "tool_calls": calls}


def _responses_turn(items: list[dict[str, Any]], calls: list[dict[str, str]], outputs: list[str]) -> None:
    for call, output in zip(calls, outputs, strict=True):
        items.append(
            {
                "type": "function_call",
                "call_id": call["id"],
                "name": call["name"],
                "arguments": call["arguments"],
            }
        )
        items.append({"type": "function_call_output", "call_id": call["id"], "output": output})


def _anthropic_call(messages: list[dict[str, Any]]) -> dict[str, Any]:
    function = TOOLS[0]["function"]
    tools = [
        {
            "name": function["name"],
            "description": function["description"],
            "input_schema": function["parameters"],
        }
    ]
    body = {"model": MODEL[0], "system": "You are a test agent.", "messages": messages, "tools": tools}
    key = ("x-api-key", os.environ["ANTHROPIC_API_KEY"])
    blocks: dict[int, dict[str, Any]] = {}
    for _, event in _post(
        "ANTHROPIC_BASE_URL", "/v1/messages", key, body | {"max_tokens": 1024, "stream": True}
    ):
        index = event.get("index", 0)
        if event.get("type") == "content_block_start":
            blocks[index] = dict(event["content_block"]) | {"json": ""}
        elif event.get("type") == "content_block_delta":
            delta = event["delta"]
            blocks[index]["text"] = blocks[index].get("text", "") + delta.get("text", "")
            blocks[index]["json"] += delta.get("partial_json", "")
    text = "".join(b.get("text", "") for b in blocks.values() if b["type"] == "text")
    calls = [
        {"id": b["id"], "name": b["name"], "arguments": b["json"] or "{}"}
        for b in blocks.values()
        if b["type"] == "tool_use"
    ]
    return {"content": text, "tool_calls": calls}


def _anthropic_turn(messages: list[dict[str, Any]], calls: list[dict[str, str]], outputs: list[str]) -> None:
    uses = [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": json.loads(c["arguments"])}
        for c in calls
    ]
    results = [
        {"type": "tool_result", "tool_use_id": c["id"], "content": out}
        for c, out in zip(calls, outputs, strict=True)
    ]
    messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def _gemini_call(contents: list[dict[str, Any]]) -> dict[str, Any]:
    function = TOOLS[0]["function"]
    declaration = {
        "name": function["name"],
        "description": function["description"],
        "parametersJsonSchema": function["parameters"],
    }
    body = {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "You are a test agent."}]},
        "tools": [{"functionDeclarations": [declaration]}],
    }
    key = ("x-goog-api-key", os.environ["GEMINI_API_KEY"])
    path = f"/v1beta/models/{MODEL[0]}:streamGenerateContent?alt=sse"
    text: list[str] = []
    calls: list[dict[str, str]] = []
    for _, chunk in _post("GOOGLE_GEMINI_BASE_URL", path, key, body):
        for candidate in chunk.get("candidates", [])[:1]:
            for part in candidate.get("content", {}).get("parts", []):
                if "functionCall" in part:
                    call = part["functionCall"]
                    calls.append(
                        {
                            "id": call.get("id", ""),
                            "name": call["name"],
                            "arguments": json.dumps(call["args"]),
                        }
                    )
                elif not part.get("thought"):
                    text.append(part.get("text", ""))
    return {"content": "".join(text), "tool_calls": calls}


def _gemini_turn(contents: list[dict[str, Any]], calls: list[dict[str, str]], outputs: list[str]) -> None:
    uses = [{"functionCall": {"name": c["name"], "args": json.loads(c["arguments"])}} for c in calls]
    results = [
        {"functionResponse": {"name": c["name"], "response": {"output": out}}}
        for c, out in zip(calls, outputs, strict=True)
    ]
    contents += [{"role": "model", "parts": uses}, {"role": "user", "parts": results}]


def _loop(prompt: str) -> str:
    call: Callable[[list[dict[str, Any]]], dict[str, Any]]
    turn: Callable[[list[dict[str, Any]], list[dict[str, str]], list[str]], None]
    if API[0] == "openai-chat":
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are a test agent."}]
        call, turn = _chat_call, _chat_turn
    elif API[0] == "gemini":
        history = [{"role": "user", "parts": [{"text": prompt}]}]
        call, turn = _gemini_call, _gemini_turn
    else:
        history = []
        call, turn = {
            "openai-responses": (_responses_call, _responses_turn),
            "anthropic": (_anthropic_call, _anthropic_turn),
        }[API[0]]
    if API[0] != "gemini":
        history.append({"role": "user", "content": prompt})
    while True:
        answer = call(history)
        calls = answer["tool_calls"]
        if not calls:
            return str(answer["content"])
        outputs = []
        for each in calls:
            command = json.loads(each["arguments"])["command"]
            done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
            outputs.append(done.stdout + done.stderr or "(no output)")
        turn(history, calls, outputs)


def _escape() -> dict[str, Any]:
    """Each attempt's outcome (``connected``, ``written``, or the error), and where the agent runs."""
    outcome: dict[str, Any] = {"connect": {}, "write": {}}
    for port in filter(None, os.environ.get("ESCAPE_PORTS", "").split(",")):
        try:
            socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()
            outcome["connect"][port] = "connected"
        except OSError as error:
            outcome["connect"][port] = error.strerror or str(error)
    for path in filter(None, os.environ.get("ESCAPE_PATHS", "").split(",")):
        try:
            with open(path, "w", encoding="utf-8") as file:
                file.write("escaped")
            outcome["write"][path] = "written"
        except OSError as error:
            outcome["write"][path] = error.strerror or str(error)
    outcome |= {"cwd": os.getcwd(), "hostname": socket.gethostname(), "pid": os.getpid()}
    outcome["env"] = {k: v for k, v in os.environ.items() if k.startswith(("HOME", "XDG_", "OPENAI_BASE"))}
    return outcome


def _read(*paths: str) -> dict[str, str]:
    """What each file holds, or why it cannot be read."""
    seen = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                seen[path] = file.read(200)
        except OSError as error:
            seen[path] = error.strerror or str(error)
    return seen


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
        elif arg == "--api":
            API[0] = next(args)
        elif arg == "--exit":
            code = int(next(args))
        elif arg == "--retries":
            RETRIES[0] = int(next(args))
        elif arg == "--sleep":
            time.sleep(float(next(args)))
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
        time.sleep(300)
    if mode == "huge":
        sys.stdout.write("x" * (3 << 20) + "\n")
        sys.stderr.write("y" * (1 << 20) + "\n")
    if mode == "env":
        print(json.dumps(dict(os.environ)))
    if mode == "escape":
        print(json.dumps(_escape()))
    if mode == "read":
        print(json.dumps(_read(prompt, MODEL[0])))
    try:
        final = _loop(prompt)
    except urllib.error.HTTPError as error:
        print(f"model error: HTTP {error.code}: {error.read().decode()}", file=sys.stderr)
        return 3
    except (OSError, http.client.HTTPException) as error:
        print(f"model error: {type(error).__name__}: {error}", file=sys.stderr)
        return 3
    print(final)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
