"""The tdm-* and X-Robots-Tag headers kept per host (crawl/tdmheaders.py), one module alone."""

from __future__ import annotations

from multidict import CIMultiDict
from yarl import URL

from harvester.config.crawl import HostPolicy
from harvester.crawl.scheduler import HostSlot
from harvester.crawl.tdmheaders import HeaderSignals, robots_tag


def slot(host: str = "e.com") -> HostSlot:
    return HostSlot(host, HostPolicy(concurrency=1, rate=1.0))


def test_nothing_kept_for_a_response_without_the_headers() -> None:
    signals, s = HeaderSignals(), slot()
    signals.seen(s, "https://e.com/robots.txt", CIMultiDict({"Content-Type": "text/plain"}))
    assert len(signals) == 0
    assert signals.take(s.host) == []


def test_each_distinct_value_once_with_its_first_url_and_count() -> None:
    signals, s = HeaderSignals(), slot()
    robots = CIMultiDict({"TDM-Reservation": "1", "tdm-policy": "https://e.com/p.json"})
    signals.seen(s, URL("https://e.com/robots.txt"), robots)
    for n in range(3):
        signals.seen(s, f"https://e.com/s{n}.xml", CIMultiDict({"X-Robots-Tag": "noindex"}))
    signals.seen(s, "https://e.com/s9.xml", CIMultiDict({"x-robots-tag": "noai, NoImageAI"}))
    assert signals.take(s.host) == [
        {
            "header": "tdm-reservation",
            "value": "1",
            "url": "https://e.com/robots.txt",
            "responses": 1,
        },
        {
            "header": "tdm-policy",
            "value": "https://e.com/p.json",
            "url": "https://e.com/robots.txt",
            "responses": 1,
        },
        {
            "header": "x-robots-tag",
            "value": "noindex",
            "url": "https://e.com/s0.xml",
            "responses": 3,
            "directives": ["noindex"],
        },
        {
            "header": "x-robots-tag",
            "value": "noai, NoImageAI",
            "url": "https://e.com/s9.xml",
            "responses": 1,
            "directives": ["noai", "noimageai"],
        },
    ]
    assert signals.take(s.host) == []  # taken: forgotten
    assert len(signals) == 0


def test_hosts_are_kept_apart() -> None:
    signals, a, b = HeaderSignals(), slot("a.com"), slot("b.com")
    signals.seen(a, "https://a.com/x", {"tdm-reservation": "1"})
    signals.seen(b, "https://b.com/x", {"tdm-reservation": "0"})
    assert [h["value"] for h in signals.take(b.host)] == ["0"]
    assert [h["value"] for h in signals.take(a.host)] == ["1"]


def test_values_are_capped_per_host() -> None:
    signals, s = HeaderSignals(), slot()
    for n in range(40):
        signals.seen(s, f"https://e.com/{n}", {"x-robots-tag": f"bot{n}: noindex"})
    kept = signals.take(s.host)
    assert len(kept) == 16
    assert kept[-1]["value"] == "bot15: noindex"


def test_a_long_value_is_cut() -> None:
    signals, s = HeaderSignals(), slot()
    signals.seen(s, "https://e.com/", {"tdm-policy": "x" * 5000})
    assert len(signals.take(s.host)[0]["value"]) == 512


def test_robots_tag_directives_and_agent() -> None:
    assert robots_tag("noindex, nofollow") == {"directives": ["noindex", "nofollow"]}
    assert robots_tag("GPTBot: noai,noimageai") == {
        "directives": ["noai", "noimageai"],
        "agent": "gptbot",
    }
    assert robots_tag("unavailable_after: 25 Jun 2010 15:00:00 PST") == {
        "directives": ["unavailable_after: 25 jun 2010 15:00:00 pst"]
    }
    assert robots_tag(" , ") == {"directives": []}


def test_a_watched_host_run_keeps_its_responses_whatever_their_slot() -> None:
    # A www host's sitemaps go through www's slot; a lookahead's robots.txt (outside the
    # run) through the host's own: the run's take gathers both, each pair once.
    signals, own, www = HeaderSignals(), slot("e.com"), slot("www.e.com")
    signals.seen(own, "https://www.e.com/robots.txt", {"x-robots-tag": "noai"})  # before
    token = signals.watch()
    signals.seen(www, "https://www.e.com/a.xml", {"x-robots-tag": "noai"})
    signals.seen(www, "https://www.e.com/b.xml", {"tdm-reservation": "1"})
    assert len(signals) == 1  # only the response outside the run went by slot
    kept = signals.take(own.host, token)
    assert [(h["header"], h["url"], h["responses"]) for h in kept] == [
        ("x-robots-tag", "https://www.e.com/robots.txt", 2),
        ("tdm-reservation", "https://www.e.com/b.xml", 1),
    ]
    assert len(signals) == 0
    # The run is over: a later response goes by its slot again.
    signals.seen(www, "https://www.e.com/c.xml", {"tdm-reservation": "1"})
    assert len(signals) == 1
