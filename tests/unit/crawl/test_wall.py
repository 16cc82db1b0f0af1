"""Bot walls (crawl/wall.py): challenge pages by vendor, and when a host counts as blocked."""

from __future__ import annotations

import pytest

from harvester.crawl.report import HostReport
from harvester.crawl.wall import CHALLENGE_MAX, Wall, challenge_vendor
from harvester.errors import FetchTimeout, HTTPStatusError

PAGES = [
    (b"<!DOCTYPE html><html><head><title>Just a moment...</title></head></html>", "cloudflare"),
    (b'<html><script src="/cdn-cgi/challenge-platform/h/b/orchestrate"></script>', "cloudflare"),
    (b"<html><body>Reference #18.1 https://errors.edgesuite.net/18.1</body></html>", "akamai"),
    (b"<html><iframe src='/_Incapsula_Resource?x=1'></iframe></html>", "imperva"),
    (b"<html><script src='https://ct.captcha-delivery.com/c.js'></script></html>", "datadome"),
    (b"<html><div id='px-captcha'></div></html>", "perimeterx"),
    (b"<html><script>AwsWafIntegration.getToken()</script></html>", "aws-waf"),
    (b"<html><title>Sucuri WebSite Firewall - Access Denied</title></html>", "sucuri"),
    (b"\xef\xbb\xbf\n<html><title>DDoS-Guard</title></html>", "ddos-guard"),
]


@pytest.mark.parametrize(("body", "vendor"), PAGES)
def test_a_vendor_challenge_page_is_recognised(body: bytes, vendor: str) -> None:
    assert challenge_vendor(body) == vendor


@pytest.mark.parametrize(
    "body",
    [
        b"<html><title>Welcome to our shop</title></html>",  # a site's own page
        b"<?xml version='1.0'?><urlset><url><loc>https://e.com/ddos-guard</loc></url></urlset>",
        b"User-agent: *\nDisallow: /cdn-cgi/challenge-platform/\n",  # a robots.txt naming it
        b"",
        b"<html><title>Just a moment...</title>" + b" " * CHALLENGE_MAX,  # too large
    ],
)
def test_other_bodies_are_no_challenge(body: bytes) -> None:
    assert challenge_vendor(body) is None


def none_report() -> HostReport:
    report = HostReport("example.com")
    report.discovery = "none"
    return report


@pytest.mark.parametrize("status", [401, 403, 451])
def test_walled_robots_and_probes_are_blocked(status: int) -> None:
    wall, report = Wall(), none_report()
    wall.robots_answer(status)
    for _ in range(3):
        wall.probe(status)
    wall.close(report, "https://example.com/robots.txt")
    assert report.discovery == "blocked"
    [failure] = report.failures
    assert (failure.kind, failure.status) == ("blocked", status)
    assert failure.url == "https://example.com/robots.txt"
    assert f"HTTP {status}" in failure.message
    assert "every probed location (3)" in failure.message


def test_one_probe_that_is_no_wall_keeps_none() -> None:
    wall, report = Wall(), none_report()
    wall.robots_answer(403)
    wall.probe(403)
    wall.probe(404)  # missing, not refused: the site may just have no sitemap
    wall.close(report, "https://example.com/robots.txt")
    assert report.discovery == "none"
    assert report.failures == []


def test_a_robots_txt_that_is_read_is_no_wall() -> None:
    wall, report = Wall(), none_report()
    wall.robots_answer(200, b"User-agent: *\nDisallow:\n")
    wall.probe(403)
    wall.close(report, "https://example.com/robots.txt")
    assert report.discovery == "none"


def test_a_challenge_robots_txt_and_challenge_probes_are_blocked() -> None:
    wall, report = Wall(), none_report()
    wall.robots_answer(200, PAGES[0][0])
    wall.probe(200, challenge=True)
    wall.close(report, "https://example.com/robots.txt")
    assert report.discovery == "blocked"
    assert "challenge page: cloudflare" in report.failures[0].message
    assert report.failures[0].status == 403  # a 200 page is no status worth naming


def test_a_found_sitemap_or_another_failure_is_not_blocked() -> None:
    found, other = HostReport("a.com"), none_report()
    found.discovery = "fallback:https://a.com/sitemap.xml"
    other.fail(HTTPStatusError("HTTP 503", url="https://a.com/sitemap.xml", status=503))
    for report in (found, other):
        wall = Wall()
        wall.robots_answer(403)
        wall.close(report, "https://a.com/robots.txt")
    assert found.discovery.startswith("fallback:")
    assert other.discovery == "none"


def test_the_report_keeps_the_first_contact_timeout_kind() -> None:
    report = HostReport("a.com")
    error = FetchTimeout("connect timeout (10s) on first contact, not retried")
    error.first_contact = "connect"
    report.fail(error)
    report.fail(FetchTimeout("no response within 30s"))
    assert report.as_dict()["first_contact_timeout"] == "connect"
    assert report.as_dict()["recovered_late"] is False
