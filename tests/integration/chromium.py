"""Headless Chromium driven over the DevTools protocol (a websocket, with aiohttp).

``open_page(path)`` loads a local file and returns what a person would see
(``document.body.innerText``), answers to JavaScript probes, and every console
error, uncaught exception and browser log error. No network: the browser gets
a dead loopback proxy and a resolver that knows no name, and its background
services (updates, sync, safe browsing, metrics) are off, so nothing leaves
loopback. Where Chromium is missing or does not start, the test is skipped
with the reason (``pytest.skip``, shown by ``-ra``), never silently.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

if TYPE_CHECKING:
    from pathlib import Path

_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root in CI containers: the sandbox refuses to start
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-breakpad",
    "--disable-client-side-phishing-detection",
    "--metrics-recording-only",
    "--safebrowsing-disable-auto-update",
    # Anything that would still try the network meets a closed port on loopback.
    "--proxy-server=http://127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


def chromium_or_skip() -> str:
    """The Chromium binary, or skip the test saying why there is none.

    ``HARVESTER_TEST_CHROMIUM`` names another binary ("" or a missing path: none).
    """
    chosen = os.environ.get("HARVESTER_TEST_CHROMIUM")
    if chosen is not None:
        if chosen and os.path.exists(chosen):
            return chosen
        pytest.skip(f"HARVESTER_TEST_CHROMIUM={chosen!r}: no Chromium there")
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.path.exists("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    pytest.skip("no Chromium here (Debian: apt-get install -y chromium; .ci/run installs it)")


@dataclass
class Page:
    """What the browser showed: the text, probe answers, and the console's errors."""

    text: str
    probes: dict[str, Any]
    errors: list[str] = field(default_factory=list)


async def _port(profile: Path, proc: asyncio.subprocess.Process) -> int:
    marker = profile / "DevToolsActivePort"
    for _ in range(300):  # 15 s
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        if proc.returncode is not None:
            break
        await asyncio.sleep(0.05)
    err = b""
    if proc.stderr is not None:
        with contextlib.suppress(asyncio.TimeoutError):
            err = await asyncio.wait_for(proc.stderr.read(2000), 1)
    pytest.skip(f"Chromium did not start its DevTools endpoint: {err.decode(errors='replace')}")


async def open_page(
    path: Path | str,
    profile: Path,
    probes: dict[str, str],
    *,
    width: int | None = None,
    screenshot: Path | None = None,
) -> Page:
    """Load ``path`` (a local file, or a loopback URL) in headless Chromium; run each probe.

    A probe is a JavaScript expression evaluated after the load; one that gives a
    Promise is awaited (for a page that builds itself after loading). ``width``: a
    phone's screen of that many CSS pixels (a mobile viewport); ``screenshot``: the
    whole page written there as PNG.
    """
    binary = chromium_or_skip()
    proc = await asyncio.create_subprocess_exec(
        binary,
        *_FLAGS,
        f"--user-data-dir={profile}",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        port = await _port(profile, proc)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                targets = await resp.json()
            ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            async with http.ws_connect(ws_url, max_msg_size=0) as ws:
                return await _drive(ws, path, probes, width, screenshot)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def _drive(
    ws: aiohttp.ClientWebSocketResponse,
    path: Path | str,
    probes: dict[str, str],
    width: int | None = None,
    screenshot: Path | None = None,
) -> Page:
    ids = itertools.count(1)
    errors: list[str] = []
    answers: dict[int, dict[str, Any]] = {}
    loaded = asyncio.Event()

    async def call(method: str, **params: Any) -> dict[str, Any]:
        n = next(ids)
        await ws.send_str(json.dumps({"id": n, "method": method, "params": params}))
        while n not in answers:
            msg = await asyncio.wait_for(ws.receive(), 15)
            if msg.type is not aiohttp.WSMsgType.TEXT:
                raise AssertionError(f"DevTools connection ended: {msg.type}")
            data = json.loads(msg.data)
            if "id" in data:
                answers[data["id"]] = data
                continue
            event, p = data.get("method"), data.get("params", {})
            if event == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(f"console.{p['type']}: {p.get('args')}")
            elif event == "Runtime.exceptionThrown":
                errors.append(f"exception: {p.get('exceptionDetails')}")
            elif event == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                errors.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif event == "Page.loadEventFired":
                loaded.set()
        reply = answers.pop(n)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    for domain in ("Runtime", "Log", "Page"):
        await call(f"{domain}.enable")
    if width is not None:
        await call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=800,
            deviceScaleFactor=1,
            mobile=True,
        )
    url = path if isinstance(path, str) else path.resolve().as_uri()  # noqa: ASYNC240 - no I/O
    await call("Page.navigate", url=url)
    while not loaded.is_set():
        await call("Runtime.evaluate", expression="1")  # reads events until the load
    await asyncio.sleep(0.2)
    await call("Runtime.evaluate", expression="1")  # late errors, if any
    text = await call("Runtime.evaluate", expression="document.body.innerText", returnByValue=True)
    if screenshot is not None:
        shot = await call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))  # noqa: ASYNC240 - small
    answered = {}
    for name, expression in probes.items():
        out = await call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        answered[name] = out["result"].get("value")
    return Page(text["result"]["value"], answered, errors)
