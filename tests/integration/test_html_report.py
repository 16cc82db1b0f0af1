"""The HTML run report in a real browser: `harvester run --html-report` on loopback sites,
then the page opened in headless Chromium (DevTools protocol): no console error, the
run's totals shown, each failed host linked to its report line. Skipped, with the
reason, where Chromium cannot be had."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image

from tests.integration.chromium import open_page
from tests.integration.conftest import free_port
from tests.integration.harvesting import CONFIG, run_cli
from tests.integration.webs import site_with_tree

if TYPE_CHECKING:
    from tests.integration.conftest import Sites

PROBES = {
    "scripts": "document.scripts.length",
    "svgs": "document.querySelectorAll('svg').length",
    "links": "[...document.querySelectorAll('#failed + ul a[href^=\"#line-\"]')]"
    ".map(a => a.textContent)",
    # Every failed host's link lands on an element that shows why it failed.
    "targets": "[...document.querySelectorAll('#failed + ul a[href^=\"#line-\"]')].map(a =>"
    " (document.getElementById(a.getAttribute('href').slice(1)) || {}).textContent || null)",
    "partial": "[...document.querySelectorAll('#partial + ul a')].map(a => a.textContent)",
    "urls": "document.getElementById('total-URLs').textContent",
    "hosts": "document.getElementById('total-hosts').textContent",
}

PHONE = 390  # CSS pixels: a phone held upright
BAR_RGB = (0x3B, 0x6F, 0xB6)  # the bars' colour (view/page.py's CSS)
PHONE_PROBES = {
    "overflow": "document.documentElement.scrollWidth",
    "totals": "(() => { const e = document.getElementById('total-URLs');"
    " const r = e.getBoundingClientRect();"
    " return {text: e.textContent, left: r.left, right: r.right, height: r.height}; })()",
    "bars": "[...document.querySelectorAll('.bars .bar')]"
    ".map(b => b.getBoundingClientRect().width)",
    "columns": "[...document.querySelectorAll('svg .bar')]"
    ".filter(r => r.getBoundingClientRect().height > 0).length",
    "charts": "[...document.querySelectorAll('svg.chart')]"
    ".map(s => s.getBoundingClientRect().right)",
}


async def test_run_html_report_renders_in_chromium(sites: Sites, tmp_path: Path) -> None:
    hosts = [await site_with_tree(sites, f"127.0.0.{60 + i}") for i in range(2)]
    dead = [f"http://127.0.0.{70 + i}:{free_port(f'127.0.0.{70 + i}')}" for i in range(2)]
    config = tmp_path / "h.toml"
    config.write_text(CONFIG)
    out = tmp_path / "urls.jsonl"
    code, _, err = await run_cli(
        *(h.origin for h in hosts),
        *dead,
        "-o",
        str(out),
        "--config",
        str(config),
        "--workers",
        "1",
        "--html-report",
    )
    assert code == 0, err
    report = json.loads(Path(f"{out}.report.json").read_text())  # noqa: ASYNC240
    page_path = Path(f"{out}.report.html")
    assert page_path.exists()  # noqa: ASYNC240
    page = await open_page(page_path, tmp_path / "profile", PROBES)
    assert page.errors == []
    assert page.probes["scripts"] == 0
    assert page.probes["svgs"] == 2  # URLs per host, lastmod (the class bars are HTML)
    assert page.probes["urls"] == f"{report['urls']:,}"
    assert report["urls"] == 6
    assert page.probes["hosts"] == f"{report['hosts_done']} done of {report['hosts_total']}"
    assert report["hosts_done"] == 4
    failed = sorted(d.removeprefix("http://") for d in dead)
    assert sorted(page.probes["links"]) == failed
    # The anchor shows the host and why it failed (a table, not its JSON line).
    for host, target in zip(page.probes["links"], page.probes["targets"], strict=True):
        assert target is not None
        assert host in target
        assert "connect" in target
        assert "{" not in target
    assert "connect" in page.text  # the failure class, in the bar chart and the list
    assert "Failures by class" in page.text
    # Partly failed: each site's 404 child; the hosts gave URLs all the same.
    assert sorted(page.probes["partial"]) == sorted(h.origin.removeprefix("http://") for h in hosts)
    assert "http_status" in page.text
    assert "{" not in page.text  # no raw JSON anywhere

    # At a phone's width: a screenshot, checked.
    shot = tmp_path / "phone.png"
    phone = await open_page(
        page_path, tmp_path / "profile2", PHONE_PROBES, width=PHONE, screenshot=shot
    )
    assert phone.errors == []
    assert phone.probes["overflow"] <= PHONE  # nothing wider than the screen
    totals = phone.probes["totals"]
    assert totals["text"] == f"{report['urls']:,}"
    assert totals["left"] >= 0
    assert totals["right"] <= PHONE
    assert totals["height"] > 0
    assert all(w > 0 for w in phone.probes["bars"])  # the failures-by-class bars are drawn
    assert phone.probes["columns"] >= 2  # columns with a height, in the SVG charts
    assert all(w <= PHONE for w in phone.probes["charts"])
    with Image.open(shot) as image:
        assert image.width == PHONE
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 20) or []
    blue = sum(n for n, c in colours if c == BAR_RGB)
    assert blue > 200  # the charts' bars are on the screenshot, not empty boxes
    assert len(colours) > 20  # text (antialiased), not a blank page


async def test_the_browser_check_catches_a_console_error(tmp_path: Path) -> None:
    # The harness must be able to fail: a page that logs an error is caught.
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>x'
        '<script>console.error("boom"); null.f()</script></body></html>'
    )
    page = await open_page(bad, tmp_path / "profile", {})
    assert any("boom" in e for e in page.errors)
    assert any("exception" in e for e in page.errors)


def test_report_verb_writes_the_page_and_names_a_bad_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harvester",
            "report",
            str(missing),
            "--html",
            str(tmp_path / "p.html"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert str(missing) in proc.stderr
    not_json = tmp_path / "x.report.json"
    not_json.write_text("{oops")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harvester",
            "report",
            str(not_json),
            "--html",
            str(tmp_path / "p.html"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "not a run report" in proc.stderr
    assert not (tmp_path / "p.html").exists()
