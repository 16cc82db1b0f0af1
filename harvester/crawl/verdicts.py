"""Each URL's robots.txt verdict for one host: the record field ``robots`` and ``--respect-robots``.

In: what discovery read of the host's robots.txt (its text, HTTP status, why it was
not read) and the ``[policy]`` settings. Out: ``HostVerdicts`` (``HostVerdicts.of``),
which the host's ``UrlBatch.take`` calls twice per batch of entries: ``drop`` before
its loop (``--respect-robots``: disallowed URLs leave, counted in the host report's
``robots_disallowed_urls``) and ``label`` after it (each new record's ``robots``:
``allowed`` | ``disallowed`` | ``unknown``, with ``policy.verdicts`` on).

The rules are compiled once per host (``robotsrules.compile_rules``). A host whose
applicable group has no Disallow rule (most hosts) is a constant: no per-URL work.
A robots.txt that could not be read makes every verdict ``unknown`` and drops
nothing (the host report's ``robots_unknown`` says why).

Usage::

    verdicts = HostVerdicts.of(policy, robots_text, status, warning, report)
    entries = verdicts.drop(entries)      # before the loop
    verdicts.label(records, first_new)    # after it
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvester.crawl.robotsrules import RobotsRules, compile_rules, parse_groups, product_token
from harvester.models import UrlEntry

if TYPE_CHECKING:
    from harvester.config.policy import PolicyConfig
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.report import HostReport
    from harvester.models import Entry

__all__ = ["ALLOWED", "DISALLOWED", "UNKNOWN", "HostVerdicts", "agent_token", "for_host"]

ALLOWED, DISALLOWED, UNKNOWN = "allowed", "disallowed", "unknown"


def agent_token(policy: PolicyConfig, run_user_agent: str) -> str:
    """The product token verdicts are for: ``policy.user_agent``, else the run's User-Agent's."""
    return product_token(policy.user_agent or run_user_agent)


class HostVerdicts:
    """One host's verdicts; ``rules`` None: its robots.txt could not be read (``unknown``)."""

    __slots__ = ("_constant", "_report", "label_records", "respect", "rules")

    def __init__(
        self,
        rules: RobotsRules | None,
        report: HostReport,
        *,
        respect: bool,
        label_records: bool,
    ) -> None:
        """``respect``: drop disallowed URLs; ``label_records``: set each record's ``robots``."""
        self.rules = rules
        self.respect = respect
        self.label_records = label_records
        self._report = report
        # The fast path: one answer for every URL of the host.
        self._constant: str | None = None
        if rules is None:
            self._constant = UNKNOWN
        elif not rules.matchable:
            self._constant = ALLOWED

    @classmethod
    def of(
        cls,
        policy: PolicyConfig,
        token: str,
        robots_text: str | None,
        status: int | None,
        report: HostReport,
        why: str | None = None,
    ) -> HostVerdicts | None:
        """The verdicts for a host, or None when ``policy`` asks for none.

        ``robots_text``: the robots.txt read (None: none was read); ``status``: its HTTP
        status (a 4xx means "no robots.txt": everything allowed, RFC 9309 §2.3.1.3);
        ``why``: why it was not read, for the report when the verdicts are unknown.
        """
        if not (policy.verdicts or policy.respect_robots):
            return None
        rules: RobotsRules | None
        if robots_text is not None:
            rules = compile_rules(parse_groups(robots_text), token)
        elif status is not None and 400 <= status < 500:
            rules = RobotsRules([], "")
        else:
            rules = None
            report.robots_unknown = why or "robots.txt was not read"
        return cls(rules, report, respect=policy.respect_robots, label_records=policy.verdicts)

    def verdict(self, url: str) -> str:
        """``allowed`` | ``disallowed`` | ``unknown`` for an absolute URL of the host."""
        if self._constant is not None:
            return self._constant
        assert self.rules is not None  # (no constant: rules that can match)
        return ALLOWED if self.rules.allowed(url) else DISALLOWED

    def drop(self, entries: list[Entry]) -> list[Entry]:
        """``entries`` less the page URLs robots.txt disallows (with ``respect``), counted."""
        if not self.respect or self._constant is not None:
            return entries
        rules = self.rules
        assert rules is not None
        kept = [e for e in entries if type(e) is not UrlEntry or rules.allowed(e.loc)]
        self._report.robots_disallowed_urls += len(entries) - len(kept)
        return kept

    def label(self, records: list[dict[str, Any]], start: int) -> None:
        """Set ``robots`` on ``records[start:]`` (the records the last loop added)."""
        if not self.label_records:
            return
        constant = self._constant
        if constant is not None:
            for rec in records[start:]:
                rec["robots"] = constant
            return
        allowed = self.rules.allowed if self.rules is not None else None
        assert allowed is not None
        for rec in records[start:]:
            rec["robots"] = ALLOWED if allowed(rec["loc"]) else DISALLOWED


def for_host(
    policy: PolicyConfig, run_user_agent: str, found: Discovered, report: HostReport
) -> HostVerdicts | None:
    """``HostVerdicts.of`` what discovery found (fetched or recalled from the state)."""
    status = found.robots_status
    text = found.robots.text if status is not None and status < 400 else None
    token = agent_token(policy, run_user_agent)
    return HostVerdicts.of(policy, token, text, status, report, found.warning)
