"""What a host says about AI use and text-and-data mining: the host report's ``allows`` block.

In: the robots.txt text the run already read, and (with ``policy.tdmrep``) the host's
``/.well-known/tdmrep.json`` (W3C TDM Reservation Protocol). Out: a JSON-ready dict
for ``HostReport.allows``, each signal with where it came from (a robots.txt line
number, the tdmrep.json URL), so a reviewer can check it:

* ``ai_crawlers``: for each product token of ``ai_crawlers.txt`` that the robots.txt
  names in a group of its own, or that a Disallow rule applies to: ``disallowed`` =
  ``entirely`` (``/`` is disallowed and no Allow rule opens anything) | ``partly`` |
  ``not``; ``group``: the group that applies (the token, or ``*``); ``lines``: its
  Disallow lines (the first five). A token not listed: no rule restricts it.
* ``content_signals``: each ``Content-Signal:`` line (``search``, ``ai-input``,
  ``ai-train`` = yes/no, as the line says) with its group's agents and line number.
* ``tdmrep``: the tdmrep.json's rules (``location``, ``tdm-reservation``,
  ``tdm-policy``), its URL and status, or why it could not be read (parsed here,
  fetched by ``tdmrep.py``; the response headers are ``tdmheaders.py``'s).

Harvester reports these; it decides nothing from them (``--respect-robots`` is the one
filter, and it reads only the verdict for ``policy.user_agent``: verdicts.py).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvester.crawl.robotsrules import compile_rules, parse_groups

if TYPE_CHECKING:
    from harvester.crawl.robotsrules import Group

__all__ = ["TDMREP_PATH", "ai_crawlers", "parse_tdmrep", "signals"]

TDMREP_PATH = "/.well-known/tdmrep.json"
_LINES = 5  # Disallow lines kept per AI crawler
_SIGNAL_WORDS = frozenset({"yes", "no"})


@functools.cache
def ai_crawlers() -> tuple[str, ...]:
    """The product tokens of ``ai_crawlers.txt`` (the maintained list), in file order."""
    text = (Path(__file__).with_name("ai_crawlers.txt")).read_text("utf-8")
    tokens = (line.partition("#")[0].strip() for line in text.splitlines())
    return tuple(token for token in tokens if token)


def signals(robots_text: str, robots_url: str) -> dict[str, Any]:
    """The AI crawler groups and Content-Signal lines of a robots.txt (see the module doc).

    >>> out = signals("User-agent: GPTBot\\nDisallow: /\\n", "https://e.com/robots.txt")
    >>> out["ai_crawlers"]["GPTBot"]
    {'disallowed': 'entirely', 'group': 'gptbot', 'lines': [2]}
    """
    groups = parse_groups(robots_text)
    named = {agent for group in groups for agent in group.agents}
    # Every token without a group of its own gets the '*' group's entry: compiled once
    # per host, not once per token (the list has a few dozen tokens, a run many hosts).
    fallback = _crawler(groups, "*")
    crawlers: dict[str, Any] = {}
    for token in ai_crawlers():
        if token.lower() in named:
            found = _crawler(groups, token)
        else:
            found = None if fallback is None else {**fallback, "lines": list(fallback["lines"])}
        if found is not None:
            crawlers[token] = found
    content = [
        {"agents": list(group.agents), "line": line, **_content_signal(value)}
        for group in groups
        for value, line in group.signals
    ]
    return {"robots_url": robots_url, "ai_crawlers": crawlers, "content_signals": content}


def _crawler(groups: list[Group], token: str) -> dict[str, Any] | None:
    """One AI crawler's entry, or None: no group of its own and no rule restricts it."""
    rules = compile_rules(groups, token.lower())
    disallows = sorted(line for allow, _, line in rules.rules if not allow)
    if not disallows:
        if rules.agent in ("", "*"):
            return None
        verdict = "not"
    elif all(not allow for allow, _, _ in rules.rules) and not rules.root_allowed():
        verdict = "entirely"
    else:
        verdict = "partly"
    return {"disallowed": verdict, "group": rules.agent, "lines": disallows[:_LINES]}


def _content_signal(value: str) -> dict[str, Any]:
    """``search=yes, ai-train=no`` as ``{"signals": {...}, "value": ...}`` (yes/no pairs only)."""
    found: dict[str, str] = {}
    for pair in value.split(","):
        key, eq, word = pair.partition("=")
        key, word = key.strip().lower(), word.strip().lower()
        if eq and key and word in _SIGNAL_WORDS:
            found[key] = word
    return {"signals": found, "value": value}


def parse_tdmrep(body: bytes, url: str) -> dict[str, Any]:
    """A tdmrep.json body as ``{"url", "rules": [...]}``, or ``{"url", "error"}``."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return {"url": url, "error": f"not JSON: {exc}"}
    if not isinstance(data, list):
        return {"url": url, "error": "not a JSON array of rules"}
    rules = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("location"), str):
            continue
        reservation = item.get("tdm-reservation")
        rule: dict[str, Any] = {
            "location": item["location"],
            "tdm-reservation": reservation if reservation in (0, 1) else None,
        }
        if isinstance(item.get("tdm-policy"), str):
            rule["tdm-policy"] = item["tdm-policy"]
        rules.append(rule)
    return {"url": url, "rules": rules}
