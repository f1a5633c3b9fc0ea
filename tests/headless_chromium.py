"""One headless Chromium for many pages, driven over the DevTools protocol on a pipe.

Starting Chromium costs a second or more here, and the browser tests open five report pages, so
they share one browser. ``--remote-debugging-pipe`` makes Chromium read protocol commands from
file descriptor 3 and write answers and events to descriptor 4, each message a JSON object ending
in a NUL byte (https://chromedevtools.github.io/devtools-protocol/): no port, no websocket, no
library. Each page opens in a fresh tab that records everything the page said while it loaded:
console calls (``Runtime.consoleAPICalled``), uncaught exceptions (``Runtime.exceptionThrown``)
and browser log entries (``Log.entryAdded``: a Content Security Policy refusal, a failed load).
Chromium's own log (``--enable-logging=stderr``) goes to a file the tests read as well.

    with Browser(tmp_path) as browser:
        page = browser.open(Path("report.html").as_uri(), screenshot=True)
        page.dom, page.messages, page.png
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--enable-logging=stderr",
         "--v=0")
MESSAGE_EVENTS = ("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded")
TIMEOUT = 60.0  # seconds for any one answer: a hung browser fails the test instead of hanging it


@dataclass(frozen=True)
class Page:
    dom: str  # document.documentElement.outerHTML once the load event fired (the script has run)
    messages: tuple[dict[str, Any], ...]  # every console / exception / log event of this tab
    png: bytes | None  # a screenshot of the viewport, when asked for


class Browser:
    def __init__(self, workdir: Path, window: tuple[int, int] = (1200, 1600)) -> None:
        assert CHROMIUM is not None, "chromium is not installed"
        import fcntl  # POSIX only, like the descriptor passing it serves; imported here so the module loads anywhere

        self.window = window
        self.log = workdir / "chromium.log"
        commands_r, self._commands = os.pipe()  # we write, Chromium reads (its fd 3)
        self._answers, answers_w = os.pipe()  # Chromium writes (its fd 4), we read

        def onto_3_and_4() -> None:  # in the child, before exec: move the pipe ends to 3 and 4
            high_r = fcntl.fcntl(commands_r, fcntl.F_DUPFD, 10)  # above 4 first, so neither dup2 clobbers the other
            high_w = fcntl.fcntl(answers_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen(
                [CHROMIUM, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={workdir / 'profile'}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=workdir, pass_fds=(3, 4), preexec_fn=onto_3_and_4,
            )
        os.close(commands_r)
        os.close(answers_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    # -- the protocol: send a command, read messages until its answer arrives ---------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._answers], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError(f"Chromium sent nothing for {TIMEOUT} s; its log: {self.log}")
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                raise ConnectionError(f"Chromium closed the pipe (exit {self._proc.poll()}); its log: {self.log}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            command["sessionId"] = session
        os.write(self._commands, json.dumps(command).encode("utf-8") + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self._events.append(message)  # an event (or the answer to nothing we wait for)

    def _wait_for_event(self, method: str, session: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        if any(e.get("method") == method and e.get("sessionId") == session for e in self._events):
            return
        while True:
            message = self._read_message(deadline)
            self._events.append(message)
            if message.get("method") == method and message.get("sessionId") == session:
                return

    # -- one page ---------------------------------------------------------------------------------
    def open(self, url: str, *, screenshot: bool = False) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):  # before navigating: nothing the page says is missed
            self.send(f"{domain}.enable", session=session)
        width, height = self.window
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        navigation = self.send("Page.navigate", {"url": url}, session)
        assert "errorText" not in navigation, navigation
        self._wait_for_event("Page.loadEventFired", session)  # the report's script runs before load
        dom = self.send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML", "returnByValue": True},
                        session)["result"]["value"]
        png = (base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"}, session)["data"])
               if screenshot else None)
        messages = tuple(e for e in self._events if e.get("sessionId") == session and e.get("method") in MESSAGE_EVENTS)
        self.send("Target.closeTarget", {"targetId": target})
        return Page(dom=dom, messages=messages, png=png)

    def close(self) -> str:
        """Quit the browser; return its log."""
        try:
            self.send("Browser.close")
        except (ConnectionError, TimeoutError, RuntimeError):
            pass
        try:
            self._proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._commands)
        os.close(self._answers)
        return self.log.read_text(encoding="utf-8", errors="replace")

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
