"""A report checked in a real browser: headless Chromium (Debian's `chromium`, installed
by scripts/setup.sh) opens the HTML file through the Chrome DevTools Protocol at a
1400-px wide window and reports console errors, uncaught exceptions, images that did not
load, and horizontal overflow (of the page, or of a table's scroll box), and keeps a
screenshot of the first screen."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WIDTH = 1400
HEIGHT = 900
TIMEOUT_S = 60.0

# Evaluated in the page once it has loaded: what a reader would see go wrong.
PROBE_JS = """
(() => {
  const broken = Array.from(document.images)
    .filter(i => !i.complete || i.naturalWidth === 0)
    .map(i => i.alt || i.src.slice(0, 60));
  const scrolling = Array.from(document.querySelectorAll('.scroll'))
    .filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => {
      const t = e.querySelector('th');
      return `${e.scrollWidth} px in a ${e.clientWidth} px box (first header: ${t ? t.textContent : '?'})`;
    });
  return {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    images: document.images.length,
    broken: broken,
    scrolling: scrolling,
    title: document.title,
  };
})()
"""


class BrowserError(RuntimeError):
    pass


@dataclass
class PageCheck:
    """What the browser saw: `problems` is empty for a page that passes."""

    url: str
    title: str = ""
    images: int = 0
    console_errors: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    overflow: list[str] = field(default_factory=list)
    screenshot: Path | None = None

    @property
    def problems(self) -> list[str]:
        return (
            [f"console error: {m}" for m in self.console_errors]
            + [f"broken image: {m}" for m in self.broken_images]
            + [f"horizontal overflow: {m}" for m in self.overflow]
        )


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise BrowserError("chromium is not installed (scripts/setup.sh installs Debian's chromium)")
    return path


class _Cdp:
    """A DevTools connection to one page: numbered commands, events kept as they come."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events: list[dict] = []

    def call(self, method: str, **params: Any) -> dict:
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if msg.get("id") == mine:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
        raise BrowserError(f"{method}: no answer within {TIMEOUT_S:g} s")

    def wait_for(self, method: str) -> dict:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            for e in self.events:
                if e["method"] == method:
                    return e
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if "method" in msg:
                self.events.append(msg)
        raise BrowserError(f"no {method} within {TIMEOUT_S:g} s")


def _console_errors(events: list[dict]) -> list[str]:
    out = []
    for e in events:
        p = e.get("params", {})
        if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif e["method"] == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            entry = p["entry"]
            out.append(f"{entry.get('text')} ({entry.get('url', '')})")
    return out


def _devtools_port(proc: subprocess.Popen) -> int:
    assert proc.stderr is not None
    deadline = time.monotonic() + TIMEOUT_S
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                raise BrowserError("chromium exited before it listened: " + " | ".join(seen[-5:]))
            continue
        seen.append(line.strip())
        m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if m:
            return int(m.group(1))
    raise BrowserError("chromium did not say where DevTools listens")


def _stop_group(proc: subprocess.Popen) -> None:
    """Ends Chromium and every helper process it started (its process group), and waits
    until none is left: a helper still writing into the profile folder made its removal
    fail ("Directory not empty")."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)  # anyone left in the group?
            except ProcessLookupError:
                return
            time.sleep(0.05)
    proc.wait()


def check_page(html: str | Path, screenshot: str | Path | None = None, width: int = WIDTH) -> PageCheck:
    """Opens the file in headless Chromium at `width` px and returns what it saw; writes a
    PNG of the first screen to `screenshot` if given."""
    path = Path(html).resolve()
    if not path.is_file():
        raise BrowserError(f"{path}: no such file")
    url = path.as_uri()
    with tempfile.TemporaryDirectory(prefix="tlab-chromium-") as profile:
        proc = subprocess.Popen(
            [
                chromium(),
                "--headless",
                "--no-sandbox",  # root in a container: Chromium's sandbox needs user namespaces
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--window-size={width},{HEIGHT}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            # Its own process group: Chromium's helpers (renderer, zygote, crashpad) are
            # ended with it, before its profile folder is removed.
            start_new_session=True,
        )
        try:
            port = _devtools_port(proc)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=TIMEOUT_S) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            if not pages:
                raise BrowserError("chromium opened no page")
            from websockets.sync.client import connect

            with connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=TIMEOUT_S) as ws:
                return _inspect(_Cdp(ws), url, width, screenshot)
        finally:
            _stop_group(proc)


def _inspect(cdp: _Cdp, url: str, width: int, screenshot: str | Path | None) -> PageCheck:
    for domain in ("Page", "Runtime", "Log"):
        cdp.call(f"{domain}.enable")
    cdp.call("Emulation.setDeviceMetricsOverride", width=width, height=HEIGHT, deviceScaleFactor=1, mobile=False)
    cdp.events.clear()
    cdp.call("Page.navigate", url=url)
    cdp.wait_for("Page.loadEventFired")
    res = cdp.call("Runtime.evaluate", expression=PROBE_JS, returnByValue=True)
    if "exceptionDetails" in res:
        raise BrowserError(f"the page probe failed: {res['exceptionDetails']}")
    seen = res["result"]["value"]
    check = PageCheck(url, title=seen["title"], images=seen["images"])
    check.console_errors = _console_errors(cdp.events)
    check.broken_images = list(seen["broken"])
    if seen["scrollWidth"] > seen["innerWidth"]:
        check.overflow.append(f"the page is {seen['scrollWidth']} px wide in a {seen['innerWidth']} px window")
    check.overflow += list(seen["scrolling"])
    if screenshot is not None:
        shot = cdp.call("Page.captureScreenshot", format="png")
        check.screenshot = Path(screenshot)
        check.screenshot.write_bytes(base64.b64decode(shot["data"]))
    return check
