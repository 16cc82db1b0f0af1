"""``targets.valid_hop``: every hop to a host no client can name is refused, cache or not."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest
import yarl

from harvester.crawl import targets
from harvester.crawl.targets import check_target, valid_hop
from harvester.errors import ForbiddenAddress, InvalidURL

if TYPE_CHECKING:
    import aiohttp


def request(url: str) -> aiohttp.ClientRequest:
    return cast("aiohttp.ClientRequest", SimpleNamespace(url=yarl.URL(url)))  # all it reads


async def test_a_refused_authority_stays_refused_after_allowed_ones_were_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(targets, "_VALID", set())
    sent: list[str] = []

    async def handler(req: aiohttp.ClientRequest) -> aiohttp.ClientResponse:
        sent.append(str(req.url))
        raise ConnectionAbortedError("the test stops here")

    allowed = ("http://a.test/", "http://a.test/again", "https://user@b.test:8443/x")
    for url in allowed:
        with pytest.raises(ConnectionAbortedError):
            await valid_hop(request(url), handler)
    assert sent == list(allowed)
    assert sorted(targets._VALID) == ["a.test", "user@b.test:8443"]
    # The same names, and a redirect to them, after the good ones were remembered.
    for url in ("http://xn--zz.a.test/", "http://xn--zz/", "http://a.test:0/", "http://1.2.3/"):
        for _ in range(2):  # a refusal is not remembered as a pass
            with pytest.raises(InvalidURL):
                await valid_hop(request(url), handler)
    assert sent == list(allowed)
    assert sorted(targets._VALID) == ["a.test", "user@b.test:8443"]


async def test_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targets, "_VALID", set())
    monkeypatch.setattr(targets, "_VALID_MAX", 3)

    async def handler(req: aiohttp.ClientRequest) -> aiohttp.ClientResponse:
        raise ConnectionAbortedError("the test stops here")

    for n in range(7):
        with pytest.raises(ConnectionAbortedError):
            await valid_hop(request(f"http://h{n}.test/"), handler)
        assert len(targets._VALID) <= 3
    assert "h6.test" in targets._VALID


def test_a_target_passed_before_does_not_vouch_for_another_scheme_or_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(targets, "_VALID", set())
    for _ in range(2):  # the first time judged, the second remembered
        check_target("http://a.test/x")
        check_target("https://a.test:8443/y?z")
    assert sorted(targets._VALID) == ["a.test", "a.test:8443"]
    refused: list[tuple[str, type[Exception]]] = [
        ("ftp://a.test/x", ForbiddenAddress),
        ("file://a.test/etc/passwd", ForbiddenAddress),
        ("http://a.te\tst:0/", InvalidURL),  # tabs are removed: the port is 0
        ("http://a.test\t:0/", InvalidURL),
        ("http://xn--zz.a.test/", InvalidURL),
        ("http://a.test:0/", InvalidURL),
    ]
    for url, error in refused:
        for _ in range(2):
            with pytest.raises(error):
                check_target(url)
    check_target("http://a.te\tst/")  # passes, judged in full (not the plain spelling)
    assert sorted(targets._VALID) == ["a.test", "a.test:8443"]
