"""``allow.signals`` compiles the '*' group once per host, not once per AI crawler token.

Each token of ``ai_crawlers.txt`` without a group of its own gets the '*' group's rules;
compiling them (three regular expressions) for each of a few dozen tokens cost about
1 ms of CPU per host. The entries must stay what compiling per token gives.
"""

from __future__ import annotations

from typing import Any

import pytest

from harvester.crawl import allow
from harvester.crawl.robotsrules import compile_rules, parse_groups

ROBOTS = (
    "User-agent: *\nDisallow: /admin/\nDisallow: /cart\n",
    "User-agent: *\nAllow: /\n",
    "User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private\n",
    "User-agent: ClaudeBot\nUser-agent: CCBot\nAllow: /\n\nUser-agent: *\nDisallow: /\n",
    "User-agent: Google-Extended\nDisallow: /news/\nAllow: /news/public\n",
    "",
)


def per_token(text: str) -> dict[str, Any]:
    """The reference: every token's entry compiled on its own."""
    groups = parse_groups(text)
    out = {}
    for token in allow.ai_crawlers():
        entry = allow._crawler(groups, token)
        if entry is not None:
            out[token] = entry
    return out


@pytest.mark.parametrize("text", ROBOTS)
def test_entries_are_those_of_each_token_compiled_alone(text: str) -> None:
    assert allow.signals(text, "https://e.com/robots.txt")["ai_crawlers"] == per_token(text)


def test_the_star_group_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counting(groups: Any, product: str) -> Any:
        calls.append(product)
        return compile_rules(groups, product)

    monkeypatch.setattr(allow, "compile_rules", counting)
    out = allow.signals(ROBOTS[2], "https://e.com/robots.txt")
    assert sorted(calls) == ["*", "gptbot"]  # GPTBot has a group of its own
    assert out["ai_crawlers"]["GPTBot"]["disallowed"] == "entirely"
    assert len(out["ai_crawlers"]) == len(allow.ai_crawlers())  # '*' disallows /private


def test_entries_do_not_share_their_lines() -> None:
    out = allow.signals(ROBOTS[0], "https://e.com/robots.txt")["ai_crawlers"]
    first, second = list(out.values())[:2]
    first["lines"].append(99)
    assert 99 not in second["lines"]


def test_signals_build_no_compiled_matcher(monkeypatch: pytest.MonkeyPatch) -> None:
    # The signals read each group's rules, never a URL's verdict: the C matcher (about
    # 25 µs a robots.txt with rules, for each token's group) is left unbuilt.
    from harvester.crawl import robotsrules

    if robotsrules._crobots is None:
        pytest.skip("the compiled matcher is not built")
    built: list[Any] = []

    class Counting:
        def __init__(self, *args: Any) -> None:
            built.append(args)

    monkeypatch.setattr(robotsrules._crobots, "Matcher", Counting)
    for text in ROBOTS:
        allow.signals(text, "https://e.com/robots.txt")
    assert built == []
    rules = compile_rules(parse_groups(ROBOTS[0]), "x")
    first = rules.compiled  # built at the first read, then kept
    assert isinstance(first, Counting)
    assert rules.compiled is first
    assert len(built) == 1
    assert compile_rules(parse_groups(ROBOTS[1]), "x").compiled is None  # no disallow
