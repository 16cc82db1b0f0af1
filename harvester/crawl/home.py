"""Where a sitemap's page URLs belong (the protocol's same-host rule), for one host.

In: the host's seed origin, what discovery found (its origin, the sitemaps its
robots.txt declared), each sitemap's listed and final URL, and the children its
indexes list. Out: the authorities (``host[:port]``) a sitemap's locs may be on,
for ``UrlBatch.at_home``: where the sitemap is (listed, or served after a
redirect), and the host itself when its robots.txt submitted the sitemap or the
index that listed it (cross-submission). Locs elsewhere are still emitted, and
counted as ``foreign_locs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.crawl.batch import authority

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["HomeHosts"]


class HomeHosts:
    """One host's record of which sitemaps were submitted by its robots.txt.

    Usage::

        homes = HomeHosts(rules.canonical)
        homes.robots(seed.origin, found.origin, found.robots.sitemaps)
        batch.at_home(homes.of(ref.url, final_url))
    """

    def __init__(self, canonical: Callable[[str], str]) -> None:
        self._canonical = canonical  # the host's canonical form (its normalize rules)
        self._submitted: set[str] = set()  # declared in robots.txt, or children of those
        self._robots_home: tuple[str, ...] = ()  # the host's own authorities

    def robots(self, seed_origin: str, origin: str, declared: Iterable[str]) -> None:
        """Discovery's result: the host's authorities and the sitemaps it submitted."""
        canon = self._canonical
        self._robots_home = (authority(canon(seed_origin)), authority(canon(origin)))
        self._submitted.update(declared)

    def child(self, index_url: str, child_url: str) -> None:
        """A child of a submitted index is submitted too."""
        if index_url in self._submitted:
            self._submitted.add(child_url)

    def of(self, listed_url: str, final_url: str) -> tuple[str, ...]:
        """The authorities the locs of the sitemap at ``listed_url`` may be on."""
        canon = self._canonical
        home = (authority(canon(listed_url)), authority(canon(final_url)))
        return home + self._robots_home if listed_url in self._submitted else home
