"""view/allows: a host report's allows block as lines and a tree branch."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from harvester.crawl.allow import signals
from harvester.view.allows import allows_branch, allows_lines

ROBOTS = "User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nContent-Signal: ai-train=no\n"


def report() -> dict[str, Any]:
    allows = signals(ROBOTS, "https://e.com/robots.txt")
    allows["tdmrep"] = {
        "url": "https://e.com/.well-known/tdmrep.json",
        "status": 200,
        "rules": [{"location": "/*", "tdm-reservation": 1, "tdm-policy": "https://e.com/p"}],
    }
    return {"host": "e.com", "allows": allows, "robots_disallowed_urls": 2}


def test_lines_name_each_signal_and_its_source() -> None:
    assert allows_lines(report()) == [
        "GPTBot: disallowed entirely (group gptbot, robots.txt lines 2)",
        "Content-Signal ai-train=no (User-agent *, line 5)",
        "TDMRep /*: reservation 1, policy https://e.com/p (https://e.com/.well-known/tdmrep.json)",
        "2 URLs dropped by --respect-robots",
    ]


def test_branch_renders_and_is_none_without_signals() -> None:
    assert allows_branch({"host": "e.com", "allows": None}) is None
    branch = allows_branch(report())
    assert branch is not None
    console = Console(width=200, record=True, color_system=None)
    console.print(branch)
    text = console.export_text()
    assert "what the site allows" in text
    assert "GPTBot: disallowed entirely" in text


def test_web_text_is_escaped() -> None:
    bad = report()
    bad["allows"]["content_signals"][0]["value"] = "ai-train=no\x1b[31m"
    branch = allows_branch(bad)
    assert branch is not None
    console = Console(width=200, record=True, color_system=None)
    console.print(branch)
    assert "\x1b" not in console.export_text()
