"""robots.txt rules compiled for per-URL verdicts (RFC 9309 matching), and the groups' signals.

In: the decoded text of a robots.txt and a product token. Out: ``RobotsRules``
(``compile_rules``), whose ``allowed(url)`` answers for any URL of the host in
one regular-expression call; ``parse_groups`` gives every group (its agents,
rules and ``Content-Signal`` lines, each with its line number) for the host
report's signals (``allow.py``). Pure and sync: no I/O.

Matching, as RFC 9309 §2.2 says:

* the group whose User-agent product token equals ours (case-insensitively)
  applies; several such groups are merged; none: the ``*`` groups, merged; none
  either: everything is allowed;
* the rule with the longest matching path wins; on a tie ``Allow`` wins;
  ``*`` matches any run of characters, a final ``$`` anchors at the path's end;
  an empty ``Disallow`` matches nothing;
* paths and patterns are compared percent-encoded: non-ASCII characters are
  encoded as UTF-8 ``%XX`` and existing escapes upper-cased on both sides (so
  ``/ツ`` and ``/%e3%83%84`` are the same path); ``%2F`` and ``/`` stay distinct.

Why not protego (already used by ``robots.py`` for sitemaps and the crawler's own
Disallow): its ``can_fetch`` parses the URL and runs one regex per rule in
Python for every call, and ``robots.py``'s ``RobotsTxt`` keeps one agent's
rules only. Here all of a group's rules become one alternation ordered by
priority, so the first alternative that matches is the winning rule: one C-level
``re.match`` per URL, and no call at all for a group without rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvester import compiled

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "Group",
    "PathPatterns",
    "RobotsRules",
    "compile_rules",
    "normalized_path",
    "parse_groups",
    "path_of",
    "product_token",
]

# The compiled matcher (harvester/crawl/_crobots.pyx); None: the regular expressions alone.
_crobots = compiled.load("_crobots")

# RFC 9309: CR, LF and CRLF each end a line.
_EOL = re.compile(r"\r\n|\r|\n").split
# RFC 9309 §2.2.1: a product token is letters, '_' and '-'.
_TOKEN = re.compile(r"[A-Za-z_-]+").match
_ESCAPE = re.compile(r"%([0-9a-fA-F]{2})")
# Misspellings of "disallow" that Google's parser accepts; sites write them.
_DISALLOW = frozenset({"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"})
_USER_AGENT = frozenset({"user-agent", "useragent", "user agent"})
# A URL's scheme and authority, when its path (which must start with '/') holds only
# ASCII without '%' or '#': then the path is matched as it stands.
_PLAIN_URL = r"[^:/?#]*://[^/?#]*(?=/[^#%\x80-\U0010ffff]*\Z)"
# The same at the start of a JSON line: its loc, the path up to the closing quote.
_PLAIN_LINE = r'\{"loc":"[^:/?#"\\]*://[^/?#"\\]*(?=/[^#%"\\\x80-\xff]*")'


def product_token(user_agent: str) -> str:
    """The leading product token of a User-Agent (``harvester`` of ``harvester/0.1 (...)``),
    lower-cased; ``*`` when it has none.

    >>> product_token("GPTBot/1.1; +https://openai.com"), product_token("")
    ('gptbot', '*')
    """
    match = _TOKEN(user_agent.strip())
    return match.group().lower() if match else "*"


@dataclass(slots=True)
class Group:
    """One group of a robots.txt: its agents (lower-cased tokens, ``*``), rules in file
    order as ``(allow, pattern, line)``, and its ``Content-Signal`` values as ``(value, line)``."""

    agents: list[str] = field(default_factory=list)
    rules: list[tuple[bool, str, int]] = field(default_factory=list)
    signals: list[tuple[str, int]] = field(default_factory=list)


def parse_groups(text: str) -> list[Group]:
    """The groups of a robots.txt text, in file order (lines are counted from 1).

    Consecutive User-agent lines share a group; a User-agent line after a rule starts
    a new one. Lines outside any group, unknown keys and Sitemap lines are skipped.

    >>> [(g.agents, g.rules) for g in parse_groups("User-agent: A\\nuser-agent: b\\nAllow: /x")]
    [(['a', 'b'], [(True, '/x', 3)])]
    """
    groups: list[Group] = []
    current: Group | None = None
    in_agents = False
    for number, line in enumerate(_EOL(text), 1):
        key, value = _key_value(line)
        if not key:
            continue
        if key in _USER_AGENT:
            if current is None or not in_agents:
                current = Group()
                groups.append(current)
            in_agents = True
            current.agents.append("*" if value.startswith("*") else product_token(value))
            continue
        if current is None:
            continue
        if key == "allow" or key in _DISALLOW:
            in_agents = False
            if value:  # an empty rule matches nothing (RFC 9309 §2.2.2)
                current.rules.append((key == "allow", value, number))
        elif key == "content-signal":
            in_agents = False
            current.signals.append((value, number))
    return groups


def _key_value(line: str) -> tuple[str, str]:
    """A line's lower-cased key and its value, comment stripped; ("", "") for none.

    A missing colon is accepted for the known keys ("disallow /"), as Google's parser does.
    """
    line = line.partition("#")[0]
    key, colon, value = line.partition(":")
    if not colon:
        words = line.split(None, 1)
        if len(words) != 2:
            return "", ""
        key, value = words
        known = key.lower()
        if known not in _USER_AGENT and known != "allow" and known not in _DISALLOW:
            return "", ""
    return key.strip().lower(), value.strip()


def _normalize(path: str) -> str:
    """``path`` percent-encoded: non-ASCII as UTF-8 %XX, escapes upper-cased."""
    if not path.isascii():
        path = "".join(
            c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode("utf-8", "replace"))
            for c in path
        )
    if "%" in path:
        path = _ESCAPE.sub(lambda m: "%" + m.group(1).upper(), path)
    return path


def _pattern(rule: str, *, in_json: bool = False) -> str:
    """A rule's path as a regular expression (``*``: any run, final ``$``: the end);
    ``in_json``: of a path inside a JSON string, which its closing quote ends."""
    anchored = rule.endswith("$")
    body = rule[:-1] if anchored else rule
    star, end = ('[^"]*', '(?=")') if in_json else (".*", r"\Z")
    regex = star.join(re.escape(part) for part in _normalize(body).split("*"))
    return regex + (end if anchored else "")


def _c_rule(pattern: str, value: int) -> tuple[str, bool, int]:
    """A pattern as ``_crobots.Matcher`` takes it: normalized, its final ``$`` a flag."""
    anchored = pattern.endswith("$")
    return _normalize(pattern[:-1] if anchored else pattern), anchored, value


def normalized_path(url: str) -> str:
    """The path and query of ``url`` percent-normalized, as the rules are matched."""
    return _normalize(path_of(url))


def _priority(rule: tuple[bool, str, int]) -> tuple[int, bool]:
    # Longest pattern first (its length as written, percent-encoded, like Google's
    # matcher), Allow before Disallow of the same length.
    allow, pattern, _ = rule
    return (-len(_normalize(pattern)), not allow)


def path_of(url: str) -> str:
    """The path and query of an absolute URL (``/`` when it has none), without fragment.

    >>> path_of("https://e.com"), path_of("https://e.com/a?b#c"), path_of("http://e.com?q")
    ('/', '/a?b', '/?q')
    """
    start = url.find("://")
    start = start + 3 if start >= 0 else 0
    slash = url.find("/", start)
    query = url.find("?", start)
    if query >= 0 and (slash < 0 or query < slash):
        path = "/" + url[query:]
    elif slash < 0:
        return "/"
    else:
        path = url[slash:]
    hash_at = path.find("#")
    return path if hash_at < 0 else path[:hash_at]


class RobotsRules:
    """The rules of the group that applies to one product token, compiled once per host.

    ``allowed(url)`` is the verdict for a URL of the host. ``matchable`` is False when
    no rule can match (no group applies, or it has no rules): the caller may skip
    every call (the fast path of most hosts).
    """

    __slots__ = ("_allow", "_built", "_compiled", "_regexes", "agent", "matchable", "rules")

    def __init__(self, rules: list[tuple[bool, str, int]], agent: str) -> None:
        """``rules``: the applicable group's ``(allow, pattern, line)``; ``agent``: which
        group they came from (the token, ``*``, or ``""``: none applies)."""
        self.agent = agent
        self.rules = sorted(rules, key=_priority)
        self.matchable = any(not allow for allow, _, _ in self.rules)
        self._allow = (True, *(allow for allow, _, _ in self.rules))
        # The regular expressions, compiled at their first use (``_re``): ``re.compile``
        # of a score of rules costs milliseconds, and a host whose verdicts are constant,
        # or the AI crawler signals of each token (allow.py), or the compiled matcher
        # need none of them. The compiled matcher is built at its first use too: the
        # AI crawler signals read only the rules, for a few dozen tokens a host.
        self._regexes: _Regexes | None = None
        self._compiled: Any = None
        self._built = False  # (a flag, not a sentinel object: it survives a pickle)

    @property
    def compiled(self) -> Any:
        """The same rules matched in C (``_crobots.Matcher``: 1 allowed, 0 disallowed),
        built at the first read; None without the compiled module or without a rule that
        can match. The regular expressions stay the reference."""
        if not self._built:
            if _crobots is not None and self.matchable:
                c_rules = [_c_rule(p, int(allow)) for allow, p, _ in self.rules]
                self._compiled = _crobots.Matcher(c_rules, 1, normalized_path, True)
            self._built = True
        return self._compiled

    def _re(self) -> _Regexes:
        if self._regexes is None:
            self._regexes = _Regexes(self.rules)
        return self._regexes

    def allowed(self, url: str) -> bool:
        """Whether the rules let ``url`` (an absolute URL on this host) be fetched
        (the regular expression: the reference the compiled matcher is tested against)."""
        if not self.matchable:
            return True
        found = self._re().url_match(url)
        if found is None:
            return self.path_allowed(_normalize(path_of(url)))
        if url.endswith("/robots.txt") and path_of(url) == "/robots.txt":
            return True  # implicitly allowed (RFC 9309 §2.2.2)
        return self._allow[found.lastindex or 0]

    def allowed_many(self, urls: list[str]) -> list[bool]:
        """``allowed`` of each URL, in order (compiled, else the regex calls in one ``map``)."""
        if self.compiled is not None:
            return list(map(bool, self.compiled.many(urls)))
        if not self.matchable:
            return [True] * len(urls)
        allow, slow = self._allow, self.allowed
        found = list(map(self._re().url_match, urls))
        return [
            slow(url) if m is None or url.endswith("/robots.txt") else allow[m.lastindex or 0]
            for m, url in zip(found, urls, strict=True)
        ]

    def lines_allowed(self, lines: list[bytes], loc_of: Callable[[bytes], str]) -> list[bool]:
        """``allowed`` of each JSON line's loc (``loc_of`` decodes one the long way)."""
        if not self.matchable:
            return [True] * len(lines)
        allow, slow = self._allow, self.allowed
        found = list(map(self._re().line_match, lines))
        return [
            slow(loc_of(line)) if m is None else allow[m.lastindex or 0]
            for m, line in zip(found, lines, strict=True)
        ]

    def path_allowed(self, path: str) -> bool:
        """Whether the rules let a normalized path (``/a?b``) be fetched."""
        if not self.rules or path == "/robots.txt":  # implicitly allowed (RFC 9309 §2.2.2)
            return True
        found = self._re().match(path)
        return True if found is None else self._allow[found.lastindex or 0]

    def root_allowed(self) -> bool:
        """``path_allowed("/")`` without the regular expressions (allow.py asks it of
        every AI crawler token): the first rule in priority order that matches ``/``."""
        for allow, pattern, _ in self.rules:
            anchored = pattern.endswith("$")
            parts = _normalize(pattern[:-1] if anchored else pattern).split("*")
            # "/" matches when the parts are, in order: "" or "/" then only "" (one '/').
            text = "".join(parts)
            if text in ("", "/") and (not anchored or text == "/" or len(parts) > 1):
                return allow
        return True

    def decisive(self, url: str) -> tuple[bool, str, int] | None:
        """The rule that decides ``url`` (``(allow, pattern, line)``), or None: no rule matches."""
        if not self.rules:
            return None
        found = self._re().match(_normalize(path_of(url)))
        return None if found is None else self.rules[(found.lastindex or 1) - 1]


class _Regexes:
    """A ``RobotsRules``' rules (in priority order) as three regular expressions."""

    __slots__ = ("line_match", "match", "url_match")

    def __init__(self, rules: list[tuple[bool, str, int]]) -> None:
        # Group i+1 of the alternation is rule i: re tries alternatives in order, so the
        # first that matches at the path's start is the highest-priority rule.
        regex = "|".join(f"({_pattern(p)})" for _, p, _ in rules)
        self.match = re.compile(regex, re.DOTALL).match
        # The same on a whole URL, in one call: it matches (the rules' group optional)
        # only when the URL's path needs no normalizing (ASCII, no '%', no '#'), which is
        # nearly every URL; otherwise ``allowed`` takes the path the long way.
        self.url_match = re.compile(_PLAIN_URL + f"(?:{regex})?", re.DOTALL).match
        # And on a JSON line (``records.encode_records``) whose loc is plain: a rule's
        # pattern stays inside the loc string ('*' stops at its closing quote, '$' is it).
        line_regex = "|".join(f"({_pattern(p, in_json=True)})" for _, p, _ in rules)
        self.line_match = re.compile((_PLAIN_LINE + f"(?:{line_regex})?").encode()).match


def compile_rules(groups: list[Group], product: str) -> RobotsRules:
    """The rules that apply to product token ``product`` (lower-case) among ``groups``.

    >>> rules = compile_rules(parse_groups("User-agent: *\\nDisallow: /a\\nAllow: /a/b$"), "x")
    >>> rules.allowed("https://e.com/a/c"), rules.allowed("https://e.com/a/b")
    (False, True)
    """
    mine = [g for g in groups if product != "*" and product in g.agents]
    which = product
    if not mine:
        mine, which = [g for g in groups if "*" in g.agents], "*"
    if not mine:
        return RobotsRules([], "")
    return RobotsRules([rule for group in mine for rule in group.rules], which)


class PathPatterns:
    """Path patterns in order, the first that matches a URL gives its value (TDMRep's
    ``location`` rules: "the most specific match is the first in sequence").

    The patterns are robots.txt's (``*``, a final ``$``, percent-normalized paths and
    query). ``value(url)`` is None when none matches. One regular expression (the
    reference) and, when built, the compiled matcher (``compiled``, values -1 for none).

    >>> tdm = PathPatterns([("/a/*.pdf$", True), ("/a/", False)])
    >>> tdm.value("https://e.com/a/x.pdf"), tdm.value("https://e.com/a/x"), tdm.value("https://e.com/")
    (True, False, None)
    """

    __slots__ = ("_match", "compiled", "values")

    def __init__(self, patterns: list[tuple[str, bool]]) -> None:
        """``patterns``: ``(location pattern, value)`` in file order."""
        self.values = [value for _, value in patterns]
        regex = "|".join(f"({_pattern(p)})" for p, _ in patterns)
        self._match = re.compile(regex, re.DOTALL).match if patterns else None
        self.compiled: Any = None
        if _crobots is not None:
            c_rules = [_c_rule(p, int(v)) for p, v in patterns]
            self.compiled = _crobots.Matcher(c_rules, -1, normalized_path, False)

    def value(self, url: str) -> bool | None:
        """The value of the first pattern matching ``url``'s path (the regex), or None."""
        if self._match is None:
            return None
        found = self._match(normalized_path(url))
        return None if found is None else self.values[(found.lastindex or 1) - 1]
