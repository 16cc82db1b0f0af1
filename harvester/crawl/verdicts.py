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

import json
import operator
from typing import TYPE_CHECKING, Any, Protocol

from harvester.crawl.robotsrules import RobotsRules, compile_rules, parse_groups, product_token
from harvester.models import UrlEntry

if TYPE_CHECKING:
    from harvester.config.policy import PolicyConfig
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.report import HostReport
    from harvester.models import Entry

__all__ = [
    "ALLOWED",
    "DISALLOWED",
    "UNKNOWN",
    "HostVerdicts",
    "LineBatch",
    "agent_token",
    "for_host",
]

ALLOWED, DISALLOWED, UNKNOWN = "allowed", "disallowed", "unknown"
# What a line gets in place of its closing "}\n", per verdict (as orjson writes the key).
_FIELD = {v: f',"robots":"{v}"}}\n'.encode() for v in (ALLOWED, DISALLOWED, UNKNOWN)}
_LOC_AT = len(b'{"loc":"')  # where a line's loc starts
_LOC = operator.itemgetter(0)  # an entry's loc (UrlEntry, SitemapChild: field 0)


class LineBatch(Protocol):
    """What ``drop`` reads and sets of the host's ``UrlBatch`` (batch.py imports this module)."""

    label: bytes | None  # what the compiled loop writes before each line's closing brace

    @property
    def encoded(self) -> bytearray | None:
        """The batch's JSON lines (None: records as dicts)."""

    @property
    def selection(self) -> object | None:
        """The --emit/--since selection, which owns ``label`` when there is one."""


def agent_token(policy: PolicyConfig, run_user_agent: str) -> str:
    """The product token verdicts are for: ``policy.user_agent``, else the run's User-Agent's."""
    return product_token(policy.user_agent or run_user_agent)


class HostVerdicts:
    """One host's verdicts; ``rules`` None: its robots.txt could not be read (``unknown``)."""

    __slots__ = ("_constant", "_labelled", "_report", "label_records", "respect", "rules")

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
        self._labelled = False  # the compiled loop writes the constant (``drop``)
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

    def drop(self, entries: list[Entry], batch: LineBatch | None = None) -> list[Entry]:
        """``entries`` less the page URLs robots.txt disallows (with ``respect``), counted.

        ``batch``: when it writes JSON lines without a selection (which owns its ``label``)
        and every URL of the host has the same verdict, the compiled loop writes the field
        itself, as the label of every line (the fast path: no pass over the lines).
        """
        constant = self._constant
        if (
            batch is not None
            and constant is not None
            and self.label_records
            and batch.encoded is not None
            and batch.selection is None
        ):
            batch.label = _FIELD[constant][:-2]  # (without the closing "}\n")
            self._labelled = True
        if not self.respect or constant is not None:
            return entries
        assert self.rules is not None
        flags = self.rules.allowed_many(list(map(_LOC, entries)))
        kept = [e for e, ok in zip(entries, flags, strict=True) if ok or type(e) is not UrlEntry]
        self._report.robots_disallowed_urls += len(entries) - len(kept)
        return kept

    def label(
        self, records: list[dict[str, Any]], lines: bytearray | None, marks: tuple[int, int]
    ) -> None:
        """Set ``robots`` on the records the last loop added: ``records[marks[0]:]``, or the
        JSON lines ``lines[marks[1]:]`` when the batch is encoded (``UrlBatch.encoded``)."""
        if not self.label_records:
            return
        if lines is not None:
            if len(lines) > marks[1] and not self._labelled:
                lines[marks[1] :] = self._label_lines(bytes(lines[marks[1] :]))
            return
        start = marks[0]
        constant = self._constant
        if constant is not None:
            for rec in records[start:]:
                rec["robots"] = constant
            return
        allowed = self.rules.allowed if self.rules is not None else None
        assert allowed is not None
        for rec in records[start:]:
            rec["robots"] = ALLOWED if allowed(rec["loc"]) else DISALLOWED

    def _label_lines(self, region: bytes) -> bytes:
        """``region`` (whole JSON lines) with ``"robots"`` before each line's closing brace.

        A raw ``}\n`` only ends a line (JSON escapes newlines in strings). Each line's
        ``loc`` (its first key, as ``records.record`` orders them) is matched where it
        stands (``RobotsRules.lines_allowed``).
        """
        lines = region.split(b"}\n")
        lines.pop()  # (after the last line's end)
        if self._constant is not None:
            field = _FIELD[self._constant]
            return field.join(lines) + field
        assert self.rules is not None
        flags = self.rules.lines_allowed(lines, _loc_of)
        fields = [_FIELD[DISALLOWED], _FIELD[ALLOWED]]
        return b"".join(map(operator.add, lines, [fields[ok] for ok in flags]))


def _loc_of(line: bytes) -> str:
    """The loc of a JSON line (its first key), decoded as JSON."""
    end = line.index(b',"url":', _LOC_AT)
    loc: str = json.loads(line[_LOC_AT - 1 : end])
    return loc


def for_host(
    policy: PolicyConfig, run_user_agent: str, found: Discovered, report: HostReport
) -> HostVerdicts | None:
    """``HostVerdicts.of`` what discovery found (fetched or recalled from the state)."""
    status = found.robots_status
    text = found.robots.text if status is not None and status < 400 else None
    token = agent_token(policy, run_user_agent)
    return HostVerdicts.of(policy, token, text, status, report, found.warning)
