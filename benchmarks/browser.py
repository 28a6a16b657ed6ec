"""Headless Chromium through the DevTools protocol: load a page, run JS, time it, screenshot.

Used by ``benchmarks/report.py`` (load times) and the report's browser tests. Needs the
``websockets`` package and a ``chromium`` binary.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from pathlib import Path

#: Timings read in the page once it has loaded: navigation start to the load event, and to
#: the first animation frame after it (laid out and painted once), in ms.
TIMING_JS = """new Promise((done) => requestAnimationFrame(() => setTimeout(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  done(JSON.stringify({load: nav.loadEventEnd, frame: performance.now(),
                       dom: nav.domContentLoadedEventEnd,
                       nodes: document.getElementsByTagName('*').length}));
}, 0)))"""


def chromium_binary() -> str:
    """The chromium executable (``chromium`` or ``chromium-browser`` on PATH)."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


class DevTools:
    """A minimal Chrome DevTools Protocol client over the browser websocket."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self.ws = connect(url, max_size=None, open_timeout=30)
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 60) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            reply = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e.get("method") == method:
                    return e
            reply = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            self.events.append(reply)

    def evaluate(self, expression: str, session: str, timeout: float = 60) -> object:
        """The JSON-decoded value of a JS expression (promises are awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True, "awaitPromise": True},
                           session=session, timeout=timeout)["result"]
        return json.loads(result["value"])

    def close(self) -> None:
        self.ws.close()


def start_chromium(profile: Path) -> tuple[subprocess.Popen, str]:
    """Headless Chromium with a DevTools port; returns the process and the browser ws URL."""
    proc = subprocess.Popen(
        [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions", f"--user-data-dir={profile}",
         "--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=(profile / "stderr.log").open("w"))
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if port_file.exists() and len(port_file.read_text().split()) == 2:
            port, path = port_file.read_text().split()
            return proc, f"ws://127.0.0.1:{port}{path}"
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("chromium did not open its DevTools port: "
                       + (profile / "stderr.log").read_text()[-2000:])


def stop(proc: subprocess.Popen) -> None:
    """Wait for the browser to exit (kill it after 10 s)."""
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def open_page(path: Path, profile: Path, check_js: str, clip: str | None = None,
              width: int = 1400, height: int = 3000) -> tuple[dict, list[dict], bytes]:
    """Load ``path``, run ``check_js`` (returns JSON text, may be a promise), screenshot the
    element ``clip`` (else the viewport); returns the state, the protocol events, the PNG."""
    profile.mkdir(parents=True, exist_ok=True)
    proc, url = start_chromium(profile)
    try:
        cdp = DevTools(url)
        target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.send("Target.attachToTarget", {"targetId": target,
                                                     "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            cdp.send(f"{domain}.enable", session=session)
        cdp.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                        "deviceScaleFactor": 1,
                                                        "mobile": False}, session=session)
        cdp.send("Page.navigate", {"url": path.as_uri()}, session=session)
        cdp.wait_for("Page.loadEventFired", timeout=120)
        state = cdp.evaluate(check_js, session)
        params: dict = {"format": "png"}
        if clip:
            box = cdp.evaluate(
                f"JSON.stringify((() => {{ const b = document.querySelector({json.dumps(clip)})"
                ".getBoundingClientRect(); return [b.left + scrollX, b.top + scrollY, b.width, "
                "b.height]; })())", session)
            params |= {"captureBeyondViewport": True,
                       "clip": dict(zip(("x", "y", "width", "height"), box, strict=True),
                                    scale=1)}
        shot = cdp.send("Page.captureScreenshot", params, session=session)
        cdp.send("Runtime.evaluate", {"expression": "1"}, session=session)  # flush events
        cdp.send("Browser.close")
        cdp.close()
    finally:
        stop(proc)
    return state, cdp.events, base64.b64decode(shot["data"])


def load_page(path: Path, profile: Path) -> dict:
    """Load ``path`` once in a fresh headless Chromium and return its timings (see
    ``TIMING_JS``, in ms) and the wall time from navigate to the load event (``wall``)."""
    profile.mkdir(parents=True, exist_ok=True)
    proc, url = start_chromium(profile)
    try:
        cdp = DevTools(url)
        target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.send("Target.attachToTarget", {"targetId": target,
                                                     "flatten": True})["sessionId"]
        cdp.send("Page.enable", session=session)
        cdp.send("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000,
                                                        "deviceScaleFactor": 1,
                                                        "mobile": False}, session=session)
        t0 = time.perf_counter()
        cdp.send("Page.navigate", {"url": path.as_uri()}, session=session)
        cdp.wait_for("Page.loadEventFired", timeout=120)
        wall = 1000 * (time.perf_counter() - t0)
        timings = cdp.evaluate(TIMING_JS, session)
        cdp.send("Browser.close")
        cdp.close()
    finally:
        stop(proc)
    return {**timings, "wall": wall}
