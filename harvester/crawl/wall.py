"""Bot walls: a host that refuses the crawler everywhere is ``blocked``, not sitemap-less.

In: what discovery saw of one host: robots.txt's status (or its body), and each
fallback location probed (its status, or that a challenge page answered). Out: at the
host's end, ``Wall.close`` turns discovery "none" into "blocked" with a ``Blocked``
failure naming the status, when robots.txt and every probed location were walled:
401, 403 or 451, or a challenge page (``challenge_vendor``: a small HTML page of a
known bot-protection vendor, served with 200, 403 or 503).

What may be fetched is not decided here: RFC 9309 reads a 4xx robots.txt as "allow
all", and the probes go out under that rule. A wall only names the outcome, so a user
can tell "this site blocked us" (worth a retry with another agent) from "this site has
no sitemap". A host with a sitemap at any probed location, or a plain 404 anywhere, is
not walled.

Example::

    vendor = challenge_vendor(b"<html><title>Just a moment...</title>...")  # "cloudflare"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvester.errors import Blocked

if TYPE_CHECKING:
    from harvester.crawl.report import HostReport

__all__ = ["CHALLENGE_MAX", "WALL_STATUSES", "Wall", "challenge_vendor"]

# Statuses that refuse the client rather than say the file is missing.
WALL_STATUSES = frozenset({401, 403, 451})
# A challenge page is small (a script and a form); a larger body is a site's own page.
CHALLENGE_MAX = 65_536

# Markers each vendor's challenge or block page carries (lower-case; matched in the
# lower-cased first CHALLENGE_MAX bytes of an HTML body).
_VENDORS: tuple[tuple[str, tuple[bytes, ...]], ...] = (
    (
        "cloudflare",
        (
            b"cf-browser-verification",
            b"/cdn-cgi/challenge-platform/",
            b"cf_chl_opt",
            b"<title>just a moment...</title>",
            b"attention required! | cloudflare",
        ),
    ),
    ("akamai", (b"errors.edgesuite.net", b"bm-verify")),
    ("imperva", (b"_incapsula_resource", b"incapsula incident id")),
    ("datadome", (b"captcha-delivery.com", b"geo.captcha-delivery")),
    ("perimeterx", (b"px-captcha", b"_pxappid")),
    ("aws-waf", (b"awswafintegration", b"aws-waf-token")),
    ("sucuri", (b"sucuri website firewall", b"cloudproxy@sucuri.net")),
    ("ddos-guard", (b"ddos-guard",)),
    ("kasada", (b"kpsdk",)),
)


def challenge_vendor(body: bytes) -> str | None:
    """The vendor whose challenge page ``body`` is, or None (not HTML, too large, or no
    vendor's marker in it). ``body``: the response's first bytes, decoded transfer.

    >>> challenge_vendor(b"<!DOCTYPE html><title>Just a moment...</title>")
    'cloudflare'
    >>> challenge_vendor(b"<urlset><url><loc>https://e.com/ddos-guard</loc></url></urlset>")
    """
    if len(body) > CHALLENGE_MAX:
        return None
    head = body.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if not head.startswith(b"<") or (b"<html" not in head and b"<!doctype html" not in head):
        return None
    for vendor, markers in _VENDORS:
        if any(marker in head for marker in markers):
            return vendor
    return None


@dataclass(slots=True)
class Wall:
    """What one host's discovery met: robots.txt walled or not, and the probes' answers.

    ``robots``: why robots.txt counts as a wall ("HTTP 403"), or None. Fed by the host
    worker: ``probe`` for each fallback location that missed (its status; 200 for a
    page that is no sitemap), ``challenged`` for a challenge page at one.
    """

    robots: str | None = None
    status: int | None = None  # robots.txt's status
    walled_probes: int = 0
    open_probes: int = 0  # probes that answered something else than a wall

    def robots_answer(
        self, status: int | None, body: bytes = b"", *, why: str | None = None
    ) -> None:
        """robots.txt answered ``status`` (``body``: its text when it was read; ``why``: the
        fetcher's message when it saw a challenge page already, a ``Blocked``)."""
        vendor = challenge_vendor(body) if body else None
        if why is not None:
            self.robots = why
        elif vendor is not None:
            self.robots = f"HTTP {status} (challenge page: {vendor})"
        elif status in WALL_STATUSES:
            self.robots = f"HTTP {status}"
        self.status = status

    def probe(self, status: int | None, *, challenge: bool = False) -> None:
        """A fallback location missed with ``status`` (``challenge``: a challenge page)."""
        if challenge or status in WALL_STATUSES:
            self.walled_probes += 1
        else:
            self.open_probes += 1

    def close(self, report: HostReport, robots_url: str) -> None:
        """At the host's end: discovery "none" becomes "blocked" (one ``Blocked`` failure,
        unless a challenge was already reported) when robots.txt was walled and no probe
        answered anything but a wall, and no other failure says otherwise."""
        if self.robots is None or self.open_probes or report.discovery != "none":
            return
        if set(report.failures_by_class) - {"blocked"}:
            return  # a 5xx, a timeout...: not a wall's answer
        report.discovery = "blocked"
        if report.failures_by_class:
            return  # a challenge at a probe was already reported as blocked
        message = f"bot wall: robots.txt answered {self.robots}"
        if self.walled_probes:
            message += f", and so did every probed location ({self.walled_probes})"
        status = self.status if self.status in WALL_STATUSES else 403
        report.fail(Blocked(message, url=robots_url, status=status or 403))
