"""verdicts: one host's per-URL robots.txt verdicts, the fast path, unknown, drop and label."""

from __future__ import annotations

import json
from typing import Any

from harvester.config import load_config
from harvester.config.policy import PolicyConfig
from harvester.crawl.batch import UrlBatch
from harvester.crawl.report import HostReport
from harvester.crawl.settings import BatchSettings
from harvester.crawl.verdicts import HostVerdicts, agent_token
from harvester.models import SitemapChild, UrlEntry
from harvester.urls.normalize import Normalizer
from harvester.urls.records import encode_records, record

ROBOTS = "User-agent: *\nDisallow: /p/\n"
LABEL = PolicyConfig(verdicts=True)
RESPECT = PolicyConfig(respect_robots=True)


def entry(loc: str) -> UrlEntry:
    return UrlEntry(loc)


def records(*paths: str) -> list[dict[str, Any]]:
    return [{"loc": f"https://e.com{p}", "url": f"https://e.com{p}"} for p in paths]


def test_on_by_default_and_off_when_asked() -> None:
    # Issue 48: each record's robots verdict is on by default (--no-verdicts: off).
    assert PolicyConfig().verdicts
    off = PolicyConfig(verdicts=False, tdmrep=False)
    assert HostVerdicts.of(off, "x", ROBOTS, 200, HostReport("e.com")) is None


def test_by_default_a_record_gets_its_verdict_and_no_tdm_field_without_tdmrep() -> None:
    verdicts = HostVerdicts.of(PolicyConfig(), "x", ROBOTS, 200, HostReport("e.com"))
    assert verdicts is not None
    recs = records("/a", "/p/1")
    verdicts.label(recs, None, (0, 0))
    assert [r["robots"] for r in recs] == ["allowed", "disallowed"]
    assert all("tdm_reserved" not in r for r in recs)


def test_label_sets_each_new_record() -> None:
    verdicts = HostVerdicts.of(LABEL, "x", ROBOTS, 200, HostReport("e.com"))
    assert verdicts is not None
    recs = records("/a", "/p/1", "/p")
    recs[0]["robots"] = "kept"  # before ``start``: not touched
    verdicts.label(recs, None, (1, 0))
    assert [r["robots"] for r in recs] == ["kept", "disallowed", "allowed"]


def test_label_lines_as_the_records_would_be_encoded() -> None:
    locs = ["https://e.com/a", "https://e.com/p/1", 'https://e.com/p/"q"', "https://e.com/p/ü"]
    recs = [record(entry(loc), "https://e.com/s.xml", "e.com") for loc in locs]
    for robots in (ROBOTS, "User-agent: other\nDisallow: /\n"):  # per line, constant
        verdicts = HostVerdicts.of(LABEL, "x", robots, 200, HostReport("e.com"))
        assert verdicts is not None
        head = bytearray(b'{"loc":"before"}\n')
        lines = head + encode_records(recs)
        verdicts.label([], lines, (0, len(head)))
        expected = [dict(r) for r in recs]
        verdicts.label(expected, None, (0, 0))
        assert lines == head + encode_records(expected)
        assert [json.loads(x)["robots"] for x in lines.splitlines()[1:]] == [
            verdicts.verdict(loc) for loc in locs
        ]


def test_drop_counts_only_disallowed_page_urls() -> None:
    report = HostReport("e.com")
    verdicts = HostVerdicts.of(RESPECT, "x", ROBOTS, 200, report)
    assert verdicts is not None
    child = SitemapChild("https://e.com/p/sitemap.xml", None, None)
    kept = verdicts.drop([entry("https://e.com/a"), entry("https://e.com/p/x"), child])
    assert [e.loc for e in kept] == ["https://e.com/a", child.loc]
    assert report.robots_disallowed_urls == 1


def test_unknown_without_robots_txt_and_4xx_allows() -> None:
    report = HostReport("e.com")
    unknown = HostVerdicts.of(LABEL, "x", None, None, report, "robots.txt read as missing: x")
    assert unknown is not None
    assert unknown.verdict("https://e.com/p/1") == "unknown"
    assert report.robots_unknown == "robots.txt read as missing: x"
    gone = HostVerdicts.of(LABEL, "x", None, 404, HostReport("e.com"))
    assert gone is not None
    assert gone.verdict("https://e.com/p/1") == "allowed"


def test_respect_with_unknown_drops_nothing() -> None:
    report = HostReport("e.com")
    verdicts = HostVerdicts.of(RESPECT, "x", None, None, report)
    assert verdicts is not None
    assert len(verdicts.drop([entry("https://e.com/p/1")])) == 1
    assert report.robots_disallowed_urls == 0


def test_fast_path_for_a_host_whose_rules_are_for_others() -> None:
    verdicts = HostVerdicts.of(
        LABEL, "x", "User-agent: GPTBot\nDisallow: /\n", 200, HostReport("e")
    )
    assert verdicts is not None
    assert verdicts.verdict("https://e.com/anything") == "allowed"
    gpt = HostVerdicts.of(
        LABEL, "gptbot", "User-agent: GPTBot\nDisallow: /\n", 200, HostReport("e")
    )
    assert gpt is not None
    assert gpt.verdict("https://e.com/anything") == "disallowed"


def test_agent_token() -> None:
    assert agent_token(PolicyConfig(), "harvester/0.1 (+https://x)") == "harvester"
    assert agent_token(PolicyConfig(user_agent="MyBot/2"), "harvester/0.1") == "mybot"


def batch_lines(robots: str, encoded: bool) -> list[dict[str, Any]]:
    """The records a host's ``UrlBatch`` writes with verdicts, decoded."""
    cfg = load_config(None, {"policy.verdicts": True, "audit.distribution": False})
    report = HostReport("e.com")
    rules = Normalizer(cfg.normalize).rules_for("e.com")
    batch = UrlBatch("e.com", BatchSettings.of(cfg), rules, report, encoded=encoded)
    batch.verdicts = HostVerdicts.of(cfg.policy, "x", robots, 200, report)
    paths = ["/a", "/p/1", "/p/\u00fc", '/p/"q"', "/b?x=%aa", "/a"]
    batch.take([entry(f"https://e.com{p}") for p in paths], "https://e.com/s.xml")
    out = batch.flush()
    assert out is not None
    return [json.loads(line) for line in out.encoded().splitlines()]


def test_batch_lines_and_records_agree() -> None:
    for robots in (ROBOTS, "User-agent: other\nDisallow: /\n"):
        lines, dicts = batch_lines(robots, True), batch_lines(robots, False)
        assert lines == dicts
        assert len(lines) == 5  # the second /a is a duplicate
    assert [r["robots"] for r in batch_lines(ROBOTS, True)] == [
        "allowed",
        "disallowed",
        "disallowed",
        "disallowed",
        "allowed",
    ]


def test_run_flags_set_the_policy_keys() -> None:
    from harvester.cli import build_parser
    from harvester.cli.options import overrides

    argv = ["run", "-i", "x", "--respect-robots", "--verdicts", "--no-tdmrep"]
    ns = build_parser().parse_args([*argv, "--robots-agent", "MyBot"])
    cfg = load_config(None, overrides(ns))
    assert cfg.policy == PolicyConfig(
        user_agent="MyBot", verdicts=True, respect_robots=True, tdmrep=False
    )
    assert load_config(None, overrides(build_parser().parse_args(["run", "-i", "x"]))).policy == (
        PolicyConfig()
    )


TDMREP = {
    "url": "https://e.com/.well-known/tdmrep.json",
    "rules": [
        {"location": "/p/open/*", "tdm-reservation": 0},
        {"location": "/p/", "tdm-reservation": 1},
        {"location": "/bad", "tdm-reservation": None},  # no valid value: left out
    ],
}


def tdm_lines(
    overrides: dict[str, Any], robots: str, tdmrep: dict[str, Any] | None, *, encoded: bool
) -> list[dict[str, Any]]:
    """A batch's records with ``overrides``, the host's tdmrep.json answer ``tdmrep``."""
    cfg = load_config(None, {**overrides, "audit.distribution": False})
    report = HostReport("e.com")
    report.allows = {"tdmrep": tdmrep} if tdmrep is not None else None
    rules = Normalizer(cfg.normalize).rules_for("e.com")
    batch = UrlBatch("e.com", BatchSettings.of(cfg), rules, report, encoded=encoded)
    batch.verdicts = HostVerdicts.of(cfg.policy, "x", robots, 200, report)
    paths = ["/a", "/p/1", "/p/open/x", "/p/\u00fc", "/bad", "/p/open/%c3%bc"]
    for half in (paths[:3], paths[3:]):  # two takes: the labels set at the first stay right
        batch.take([entry(f"https://e.com{p}") for p in half], "https://e.com/s.xml")
    out = batch.flush()
    assert out is not None
    assert report.urls + report.robots_disallowed_urls == len(paths)
    return [json.loads(line) for line in out.encoded().splitlines()]


def test_tdm_reserved_first_matching_location_and_lines_agree_with_records() -> None:
    both = {"policy.verdicts": True, "policy.tdmrep": True}
    lines = tdm_lines(both, ROBOTS, TDMREP, encoded=True)
    assert lines == tdm_lines(both, ROBOTS, TDMREP, encoded=False)
    # With --since, whose selection owns the batch's label: the same fields, beside its own.
    since = {**both, "output.since": "2000-01-01"}
    selected = tdm_lines(since, ROBOTS, TDMREP, encoded=True)
    assert selected == tdm_lines(since, ROBOTS, TDMREP, encoded=False)
    assert [{k: v for k, v in r.items() if k != "since"} for r in selected] == lines
    assert {r["since"] for r in selected} == {"undated"}
    assert [(r["robots"], r["tdm_reserved"]) for r in lines] == [
        ("allowed", None),
        ("disallowed", True),
        ("disallowed", False),
        ("disallowed", True),
        ("allowed", None),
        ("disallowed", False),
    ]
    # The key order is the one the dict path gives (what JSON Lines readers see).
    assert list(lines[0])[-2:] == ["robots", "tdm_reserved"]


def test_tdm_reserved_alone_and_null_without_rules() -> None:
    tdm_only = {"policy.tdmrep": True, "policy.verdicts": False}
    lines = tdm_lines(tdm_only, ROBOTS, TDMREP, encoded=True)
    assert "robots" not in lines[0]
    assert [r["tdm_reserved"] for r in lines] == [None, True, False, True, None, False]
    for published in (None, {"url": "u", "status": 404}, {"url": "u", "rules": []}):
        for encoded in (True, False):
            # No rules published: no key at all ("when the host published any").
            nothing = tdm_lines(tdm_only, ROBOTS, published, encoded=encoded)
            assert len(nothing) == 6
            assert not any("tdm_reserved" in r for r in nothing)


def test_respect_and_labels_keep_only_allowed_records() -> None:
    over = {"policy.verdicts": True, "policy.respect_robots": True, "policy.tdmrep": True}
    lines = tdm_lines(over, ROBOTS, TDMREP, encoded=True)
    assert lines == tdm_lines(over, ROBOTS, TDMREP, encoded=False)
    assert [(r["loc"][13:], r["robots"], r["tdm_reserved"]) for r in lines] == [
        ("/a", "allowed", None),
        ("/bad", "allowed", None),
    ]
