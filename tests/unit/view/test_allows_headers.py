"""view/allows: the tdm-* and X-Robots-Tag headers of a host report's allows block."""

from __future__ import annotations

from typing import Any

from harvester.view.allows import allows_lines


def report(headers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"host": "e.com", "allows": {"headers": headers}}


def test_each_header_with_its_first_url_and_count() -> None:
    headers = [
        {
            "header": "tdm-reservation",
            "value": "1",
            "url": "https://e.com/robots.txt",
            "responses": 1,
        },
        {
            "header": "x-robots-tag",
            "value": "noindex",
            "url": "https://e.com/s.xml",
            "responses": 3,
            "directives": ["noindex"],
        },
    ]
    assert allows_lines(report(headers)) == [
        "header tdm-reservation: 1 (https://e.com/robots.txt)",
        "header x-robots-tag: noindex (https://e.com/s.xml, 3 responses)",
    ]


def test_no_headers_no_line() -> None:
    assert allows_lines(report([])) == []


def test_a_skipped_tdmrep_says_why() -> None:
    tdm = {
        "url": "https://e.com/.well-known/tdmrep.json",
        "skipped": "robots.txt answered HTTP 403",
    }
    assert allows_lines({"host": "e.com", "allows": {"tdmrep": tdm}}) == [
        "TDMRep not asked: robots.txt answered HTTP 403 (https://e.com/.well-known/tdmrep.json)"
    ]
