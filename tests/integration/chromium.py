"""Headless Chromium driven over the DevTools protocol on a pipe: open a page, read the DOM, take a screenshot.

Why not Playwright: its Python package only drives a browser through its own Node driver and expects the
browser build it downloads (which cannot be reached here); pointed at Debian's ``chromium`` it still speaks
the same DevTools protocol, over the same ``--remote-debugging-pipe``. Speaking it directly takes the
standard library only, no new dependency, and gives what the tests need: every console message and page
error, every network request, evaluation in the page, and screenshots. Why not ``--dump-dom`` and
``--screenshot``: they show neither console errors nor requests, and cannot click a link.

The protocol on the pipe: JSON messages ended by a NUL byte, Chromium reading fd 3 and writing fd 4.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INSTALL = "apt-get update && apt-get install -y chromium"
"""The one-line install command (Debian's package), the reason a browser test is skipped without it."""

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


def chromium_binary() -> str | None:
    """The installed Chromium, or ``None``."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


class ProtocolError(RuntimeError):
    """Chromium answered a command with an error, or went away."""


@dataclass
class Page:
    """One tab, and everything it reported since it was opened."""

    browser: Browser
    session: str
    console: list[dict[str, Any]] = field(default_factory=list)
    """``Runtime.consoleAPICalled`` and ``Log.entryAdded`` params, in order."""
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    """The URL of every request the page made."""

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.call(method, params, self.session)

    def open(self, url: str, timeout: float = 20.0) -> None:
        """Navigate to ``url`` and wait for its load event."""
        self.browser.loaded.discard(self.session)
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while self.session not in self.browser.loaded:
            if time.monotonic() > deadline:
                raise ProtocolError(f"{url} did not load within {timeout} s")
            self.browser.pump()

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` evaluated in the page (DevTools evaluation: the page needs no script)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors and page exceptions, as text."""
        out = [json.dumps(e) for e in self.exceptions]
        for message in self.console:
            level = message.get("type") or message.get("entry", {}).get("level")
            if level in ("error", "assert"):
                out.append(json.dumps(message))
        return out

    def screenshot(self, path: Path, width: int, height: int) -> None:
        """A PNG of the page's top ``width`` x ``height`` CSS pixels."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))


class Browser:
    """A headless Chromium with a fresh profile, spoken to over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # Moved above 9 first, so that placing them on 3 and 4 in the child cannot overwrite one another.
        high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
        for fd in (to_chrome_r, from_chrome_w):
            os.close(fd)

        def fds() -> (
            None
        ):  # in the child, before the descriptors not kept are closed: Chromium reads 3, writes 4
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(high_r)
        os.close(high_w)
        self._buffer = b""
        self._next = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self.pages: dict[str, Page] = {}
        self.loaded: set[str] = set()

    def _send(self, method: str, params: dict[str, Any], session: str | None) -> int:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        return self._next

    def pump(self, timeout: float = 20.0) -> None:
        """Read one message and file it (an answer, or an event of a page)."""
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise ProtocolError("Chromium stopped answering")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise ProtocolError("Chromium closed the pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message = json.loads(raw)
        if "id" in message:
            self._answers[message["id"]] = message
            return
        page = self.pages.get(message.get("sessionId", ""))
        if page is None:
            return
        method, params = message.get("method"), message.get("params", {})
        if method in ("Runtime.consoleAPICalled", "Log.entryAdded"):
            page.console.append(params)
        elif method == "Runtime.exceptionThrown":
            page.exceptions.append(params)
        elif method == "Network.requestWillBeSent":
            page.requests.append(params["request"]["url"])
        elif method == "Page.loadEventFired":
            self.loaded.add(page.session)

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """Send a command and wait for its answer (events that arrive meanwhile are filed)."""
        ident = self._send(method, params or {}, session)
        while ident not in self._answers:
            self.pump()
        answer = self._answers.pop(ident)
        if "error" in answer:
            raise ProtocolError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result

    def new_page(self) -> Page:
        """A new tab with the console, page errors and network requests recorded."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(browser=self, session=session)
        self.pages[session] = page
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        return page

    def close(self) -> None:
        with suppress(ProtocolError):  # it may already be gone
            self.call("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)


@contextmanager
def browser(binary: str) -> Iterator[Browser]:
    """A headless Chromium with a fresh profile directory, closed and removed after the block."""
    profile = Path(tempfile.mkdtemp(prefix="alisio-chromium-"))
    started = Browser(binary, profile)
    try:
        yield started
    finally:
        started.close()
        shutil.rmtree(profile, ignore_errors=True)
