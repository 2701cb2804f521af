"""A hostile model endpoint for the proxy's adversarial tests: it answers each request with what ``answer``
returns, written piece by piece (chunked, a pause before each), for as long as the pieces last (forever, for
an endless generator), and logs what it saw: every request, how many answers are still being written, and
when an answer's connection was found closed by the client.

Answers of its own (each a function of the request):
- ``honest_chat``: a streamed Chat Completions answer after ``delay_s``, reporting the usage the request could
  cost: input tokens = the body's bytes / 4, output = its ``max_tokens``;
- ``endless_anthropic``: a Messages stream that reports 1,234 input tokens in ``message_start`` and then sends a
  text delta every 50 ms, for ever;
- ``absurd_chat``: a final text answer whose usage says ``prompt_tokens: 10**30``;
- ``end_first``: for ``anthropic`` and ``openai-responses``, a first answer whose end event comes before its
  blocks (a tool call running ``command``), then a plain final text.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Self

from tests.integration.servers import QuietServer


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else {}


@dataclass(frozen=True)
class Answer:
    pieces: Iterable[bytes]
    status: int = 200
    content_type: str = "text/event-stream"
    pause_s: float = 0.0
    chunked: bool = True
    """``False``: no length and not chunked, the body ending with the connection (HTTP/1.0's way)."""


@dataclass
class _Log:
    requests: list[Seen] = field(default_factory=list)
    writing: int = 0
    closed_at: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def sse(*events: tuple[str | None, object]) -> bytes:
    """``event:`` (when named) and ``data:`` lines, each event ended by a blank line."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


class HostileEndpoint:
    """The endpoint on 127.0.0.1 at a free port (``base_url`` ends with ``/v1``)."""

    def __init__(self, answer: Callable[[Seen], Answer]) -> None:
        self.log = _Log()
        log = self.log

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return None

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with log.lock:
                    log.requests.append(seen)
                    log.writing += 1
                try:
                    self._write(answer(seen))
                finally:
                    with log.lock:
                        log.writing -= 1

            def _write(self, reply: Answer) -> None:
                self.close_connection = True
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                if reply.chunked:
                    self.send_header("transfer-encoding", "chunked")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for piece in reply.pieces:
                        if reply.pause_s:
                            time.sleep(reply.pause_s)
                        self.wfile.write(b"%x\r\n%b\r\n" % (len(piece), piece) if reply.chunked else piece)
                        self.wfile.flush()
                    if reply.chunked:
                        self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    with log.lock:
                        log.closed_at.append(time.monotonic())

        self._server = QuietServer(Handler)
        self._server.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[Seen]:
        with self.log.lock:
            return list(self.log.requests)

    @property
    def writing(self) -> int:
        """Answers still being written (an endless one whose client never went away stays here)."""
        with self.log.lock:
            return self.log.writing

    def close(self) -> None:
        self._server.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def _chat_chunks(text: str, usage: dict[str, Any]) -> bytes:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    delta = {"role": "assistant", "content": text}
    return sse(
        (None, base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        (None, base | {"choices": [], "usage": usage}),
        (None, "[DONE]"),
    )


def honest_chat(delay_s: float) -> Callable[[Seen], Answer]:
    """See the module docstring."""

    def answer(seen: Seen) -> Answer:
        request = seen.json()
        usage = {"prompt_tokens": len(seen.body) // 4, "completion_tokens": request.get("max_tokens", 100)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return Answer(pieces=[_chat_chunks("ok", usage)], pause_s=delay_s)

    return answer


def endless_anthropic(seen: Seen, *, chunked: bool = True) -> Answer:
    """See the module docstring (``chunked=False``: the body ends with the connection)."""

    def pieces() -> Iterator[bytes]:
        start: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m"}
        start["content"] = []
        start["usage"] = {"input_tokens": 1234, "output_tokens": 1}
        yield sse(
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )  # fmt: skip
        while True:
            delta = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "la "},
            }
            yield sse(("content_block_delta", delta))

    return Answer(pieces=pieces(), pause_s=0.05, chunked=chunked)


def absurd_chat(seen: Seen) -> Answer:
    """See the module docstring."""
    return Answer(pieces=[_chat_chunks("Done.", {"prompt_tokens": 10**30, "completion_tokens": 5})])


def _anthropic_end_first(command: str) -> bytes:
    message: dict[str, Any] = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
    }
    message["usage"] = {"input_tokens": 10, "output_tokens": 1}
    block = {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}
    arguments = {"type": "input_json_delta", "partial_json": json.dumps({"command": command})}
    return sse(
        ("message_stop", {"type": "message_stop"}),
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": arguments}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
    )  # fmt: skip


def _responses_end_first(command: str) -> bytes:
    response: dict[str, Any] = {"id": "r1", "object": "response", "status": "completed", "model": "m"}
    response["output"] = []
    response["usage"] = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    item: dict[str, Any] = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash"}
    item |= {"arguments": json.dumps({"command": command}), "status": "completed"}
    return sse(
        ("response.completed", {"type": "response.completed", "response": response}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
    )


def _final(api: str) -> bytes:
    if api == "anthropic":
        message: dict[str, Any] = {"id": "m2", "type": "message", "role": "assistant", "model": "m"}
        message["content"] = []
        message["usage"] = {"input_tokens": 10, "output_tokens": 1}
        text = {"type": "text_delta", "text": "Fixed."}
        return sse(
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": text}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
            ("message_stop", {"type": "message_stop"}),
        )  # fmt: skip
    item: dict[str, Any] = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
    item["content"] = [{"type": "output_text", "text": "Fixed.", "annotations": []}]
    response: dict[str, Any] = {"id": "r2", "object": "response", "status": "completed", "model": "m"}
    response["output"] = [item]
    response["usage"] = {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
    return sse(
        ("response.created", {"type": "response.created", "response": response | {"output": []}}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": response}),
    )


def end_first(api: str, command: str) -> Callable[[Seen], Answer]:
    """See the module docstring."""
    served = []

    def answer(seen: Seen) -> Answer:
        served.append(seen)
        first = _anthropic_end_first if api == "anthropic" else _responses_end_first
        return Answer(pieces=[first(command) if len(served) == 1 else _final(api)])

    return answer
