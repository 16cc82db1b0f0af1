"""robotsrules: the conformance cases (tests/data/robots_conformance.json) and the fast path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harvester.crawl.robotsrules import compile_rules, parse_groups, path_of, product_token
from harvester.crawl.verdicts import line_loc
from harvester.models import UrlEntry
from harvester.urls.records import encode_records, record

_DATA = json.loads(
    (Path(__file__).parents[2] / "data" / "robots_conformance.json").read_text("utf-8")
)
_CHECKS = [
    pytest.param(case, path, allowed, id=f"{case['name']}:{path}")
    for case in _DATA["cases"]
    for path, allowed in case["checks"]
]


@pytest.mark.parametrize(("case", "path", "allowed"), _CHECKS)
def test_conformance(case: dict[str, Any], path: str, allowed: bool) -> None:
    rules = compile_rules(parse_groups(case["robots"]), case["agent"])
    url = _DATA["base"] + path
    assert rules.allowed(url) is allowed  # the whole-URL match (the odd URL: the path's)
    assert rules.allowed_many([url]) == [allowed]
    if path != "/robots.txt":  # the JSON line path: the record's line, its loc matched in place
        line = bytes(encode_records([record(UrlEntry(url), None, "foo.bar")]))[:-2]
        assert rules.lines_allowed([line], line_loc) == [allowed]
    # The deciding rule agrees with the verdict (no rule: allowed).
    rule = rules.decisive(url)
    if path != "/robots.txt":
        assert (rule is None or rule[0]) is allowed


def test_enough_cases() -> None:
    # The data file is the proof: it must not shrink unnoticed.
    assert len(_CHECKS) >= 140
    assert {c["source"].split(" ")[0] for c in _DATA["cases"]} == {"RFC", "Google"}


def test_fast_path_when_no_disallow_rule_can_match() -> None:
    only_allow = compile_rules(parse_groups("User-agent: *\nAllow: /a\n"), "x")
    other_agent = compile_rules(parse_groups("User-agent: b\nDisallow: /\n"), "x")
    assert not only_allow.matchable
    assert not other_agent.matchable
    assert other_agent.agent == ""
    assert compile_rules(parse_groups("User-agent: b\nDisallow: /\n"), "b").matchable


def test_groups_keep_lines_and_content_signals() -> None:
    text = "User-agent: *\nContent-Signal: search=yes, ai-train=no\nDisallow: /p\n"
    (group,) = parse_groups(text)
    assert group.agents == ["*"]
    assert group.rules == [(False, "/p", 3)]
    assert group.signals == [("search=yes, ai-train=no", 2)]


def test_path_and_token() -> None:
    assert path_of("https://e.com:8080/a/b?c=d#frag") == "/a/b?c=d"
    assert path_of("https://e.com?x") == "/?x"
    assert product_token("Harvester/0.1 (+https://x)") == "harvester"
    assert product_token("*") == "*"


def test_twenty_rules_pick_the_longest() -> None:
    lines = [f"Disallow: /section{i}/" for i in range(19)] + ["Allow: /section3/public/"]
    rules = compile_rules(parse_groups("User-agent: *\n" + "\n".join(lines)), "x")
    assert not rules.allowed("https://e.com/section3/x")
    assert rules.allowed("https://e.com/section3/public/x")
    assert rules.allowed("https://e.com/section30/x")
    assert rules.decisive("https://e.com/section3/public/x") == (True, "/section3/public/", 21)
