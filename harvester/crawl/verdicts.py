"""Each URL's robots.txt verdict and TDMRep reservation for one host: the record fields
``robots`` and ``tdm_reserved``, and ``--respect-robots``.

In: what discovery read of the host's robots.txt (its text, HTTP status, why it was
not read), the host's tdmrep.json rules (``HostReport.allows["tdmrep"]``, read at the
first batch: it is fetched after discovery) and the ``[policy]`` settings. Out:
``HostVerdicts`` (``HostVerdicts.of``), which the host's ``UrlBatch.take`` calls
twice per batch of entries: ``drop`` before its loop (``--respect-robots``:
disallowed URLs leave, counted in the host report's ``robots_disallowed_urls``) and
``label`` after it. Each new record gets, with ``policy.verdicts``, ``robots`` =
``allowed`` | ``disallowed`` | ``unknown``, and with ``policy.tdmrep``
``tdm_reserved`` = true | false | null (the first tdmrep.json rule whose
``location`` matches decides; none matches, or the host published none: null).

The rules are compiled once per host (``robotsrules.compile_rules``,
``robotsrules.PathPatterns``). A host whose applicable group has no Disallow rule
(most hosts) is a constant: no per-URL work. A robots.txt that could not be read
makes every verdict ``unknown`` and drops nothing (the host report's
``robots_unknown`` says why). How each record gets its fields:

* JSON lines written by the compiled loop (``_chost``): a constant label is the
  batch's ``label``; otherwise ``line_labels`` (``_crobots.LineLabels``) gives each
  line its label by its loc as the loop writes it;
* JSON lines of the Python loop: ``label`` inserts the fields after the loop;
* records as dicts: ``label`` sets the keys.

Usage::

    verdicts = HostVerdicts.of(policy, token, robots_text, status, report)
    entries = verdicts.drop(entries, batch)     # before the loop
    verdicts.label(records, lines, marks)       # after it
"""

from __future__ import annotations

import json
import operator
from typing import TYPE_CHECKING, Any, Protocol

from harvester import compiled
from harvester.crawl.robotsrules import (
    PathPatterns,
    RobotsRules,
    compile_rules,
    parse_groups,
    product_token,
)
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
    "line_loc",
    "tdm_patterns",
]

ALLOWED, DISALLOWED, UNKNOWN = "allowed", "disallowed", "unknown"
_VERDICTS = (DISALLOWED, ALLOWED, UNKNOWN)  # by the compiled matcher's value
_TDM_JSON = {None: b"null", False: b"false", True: b"true"}
_LOC_AT = len(b'{"loc":"')  # where a line's loc starts
_LOC = operator.itemgetter(0)  # an entry's loc (UrlEntry, SitemapChild: field 0)
_crobots = compiled.load("_crobots")


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


def tdm_patterns(tdmrep: dict[str, Any] | None) -> PathPatterns | None:
    """The ``location`` rules of a host's tdmrep.json (``allow.fetch_tdmrep``'s answer) in
    file order, each reserving (``tdm-reservation`` 1) or not (0); None: no rule published.
    A rule without a valid reservation (0 or 1) is left out."""
    rules = (tdmrep or {}).get("rules") or []
    found = [
        (str(rule["location"]), rule["tdm-reservation"] == 1)
        for rule in rules
        if rule.get("tdm-reservation") in (0, 1) and isinstance(rule.get("location"), str)
    ]
    return PathPatterns(found) if found else None


def _label(robots: str | None, tdm: bool | None, with_tdm: bool) -> bytes:
    """What a line gets before its closing brace (as orjson writes the keys)."""
    out = b"" if robots is None else f',"robots":"{robots}"'.encode()
    return out + (b',"tdm_reserved":' + _TDM_JSON[tdm] if with_tdm else b"")


class HostVerdicts:
    """One host's verdicts; ``rules`` None: its robots.txt could not be read (``unknown``)."""

    __slots__ = (
        "_base_label",
        "_constant",
        "_decided",
        "_labelled",
        "_report",
        "_tdm_read",
        "base_label",
        "label_records",
        "line_labels",
        "respect",
        "rules",
        "tdm",
        "tdm_on",
    )

    def __init__(
        self,
        rules: RobotsRules | None,
        report: HostReport,
        *,
        respect: bool,
        label_records: bool,
        tdm: bool = False,
    ) -> None:
        """``respect``: drop disallowed URLs; ``label_records``: set each record's ``robots``;
        ``tdm``: set each record's ``tdm_reserved`` (from ``report.allows["tdmrep"]``)."""
        self.rules = rules
        self.respect = respect
        self.label_records = label_records
        self.tdm_on = tdm
        self.tdm: PathPatterns | None = None  # read at the first ``drop`` (``_read_tdm``)
        self._tdm_read = False
        self._report = report
        # The fast path: one answer for every URL of the host.
        self._constant: str | None = None
        self._labelled = False  # the compiled loop writes the fields (``drop``)
        self._decided = False  # how the lines get their fields is decided (first batch)
        # The batch's label before ``drop`` made it the host's constant (``late_tdm``).
        self._base_label: bytes | None = None
        # The batch's label when ``line_labels`` was made: the loop leaves each line's
        # there, and the batch gets this back after each loop (``UrlBatch.take``).
        self.base_label: bytes | None = None
        # Each line's label by its loc, for the compiled loop (``_crobots.LineLabels``).
        self.line_labels: Any = None
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
        robots = policy.verdicts or policy.respect_robots
        if not (robots or policy.tdmrep):
            return None
        rules: RobotsRules | None = RobotsRules([], "")
        if not robots:
            pass  # tdm_reserved alone: the robots.txt is not matched
        elif robots_text is not None:
            rules = compile_rules(parse_groups(robots_text), token)
        elif status is None or not 400 <= status < 500:
            rules = None
            report.robots_unknown = why or "robots.txt was not read"
        return cls(
            rules,
            report,
            respect=policy.respect_robots,
            label_records=policy.verdicts,
            tdm=policy.tdmrep,
        )

    def verdict(self, url: str) -> str:
        """``allowed`` | ``disallowed`` | ``unknown`` for an absolute URL of the host."""
        if self._constant is not None:
            return self._constant
        assert self.rules is not None  # (no constant: rules that can match)
        return ALLOWED if self.rules.allowed(url) else DISALLOWED

    def tdm_reserved(self, url: str) -> bool | None:
        """``tdm_reserved`` for an absolute URL of the host (None: no rule matches)."""
        self._read_tdm()
        return None if self.tdm is None else self.tdm.value(url)

    def _read_tdm(self) -> None:
        if not self._tdm_read:
            self._tdm_read = True
            if self.tdm_on:
                self.tdm = tdm_patterns((self._report.allows or {}).get("tdmrep"))

    def _with_tdm(self) -> bool:
        """Whether records get ``tdm_reserved``: only where the host published TDMRep
        rules (issue 48: "when the host published any"; no key on the others)."""
        return self.tdm_on and self.tdm is not None

    def _robots_fixed(self) -> str | None:
        """The verdict every labelled record gets, or None: per URL. With ``respect``,
        the page URLs left after ``drop`` are all allowed."""
        return self._constant if self._constant is not None or not self.respect else ALLOWED

    def _constant_label(self) -> bytes | None:
        """The label of every line when no field varies by URL, else None."""
        robots = self._robots_fixed() if self.label_records else None
        if (self.label_records and robots is None) or (self.tdm_on and self.tdm is not None):
            return None
        return _label(robots, None, self._with_tdm())

    def drop(self, entries: list[Entry], batch: LineBatch | None = None) -> list[Entry]:
        """``entries`` less the page URLs robots.txt disallows (with ``respect``), counted.

        ``batch``: when it writes JSON lines, the fields are written as the lines are:
        a constant label is the batch's ``label`` (without a selection, which owns it),
        else ``line_labels`` labels each line in the compiled loop, when it runs.
        """
        self._read_tdm()
        if batch is not None and batch.encoded is not None and not self._decided:
            self._decided = True
            self._label_as_written(batch)
        constant = self._constant
        if not self.respect or constant is not None:
            return entries
        assert self.rules is not None
        flags = self.rules.allowed_many(list(map(_LOC, entries)))
        kept = [e for e, ok in zip(entries, flags, strict=True) if ok or type(e) is not UrlEntry]
        self._report.robots_disallowed_urls += len(entries) - len(kept)
        return kept

    def _label_as_written(self, batch: LineBatch) -> None:
        """Have the loop write the fields into each line (at the host's first batch)."""
        if not (self.label_records or self.tdm_on):
            return
        # --emit/--since own the batch's label (each line's event when the loop writes
        # it, checked at the flush as what the loop wrote): with a selection the fields
        # follow it in each line's label (``LineLabels``), and the batch's label is put
        # back after each loop (``base_label``), as ``label`` would write them.
        selection = batch.selection is not None
        self.base_label = batch.label
        constant = self._constant_label()
        if constant == b"":
            self._base_label = batch.label
            self._labelled = True  # no field on this host's lines (``label``: nothing to do)
            return
        if constant is not None and not selection:
            self._base_label = batch.label
            batch.label = constant  # (kept by the batch: its label is decided at its first take)
            self._labelled = True
            return
        if _crobots is None or compiled.load("_chost") is None:
            return  # the Python loop: ``label`` inserts the fields after it
        robots = self._robots_fixed()
        matcher = None
        if constant is not None:
            pass  # (a selection's: the same label for every line, after its own)
        elif self.label_records and robots is None:
            assert self.rules is not None
            matcher = self.rules.compiled
        tdm = self.tdm.compiled if self.tdm is not None else None
        if (self.label_records and robots is None and matcher is None) or (
            self.tdm is not None and tdm is None
        ):
            return
        base = batch.label or b""
        table = tuple(
            base + _label(verdict if self.label_records else None, reserved, self._with_tdm())
            for verdict in _VERDICTS
            for reserved in (None, False, True)
        )
        fixed = _VERDICTS.index(robots) if robots is not None else 1
        self.line_labels = _crobots.LineLabels(matcher, fixed, tdm, -1, table)
        self._labelled = True

    def late_tdm(self, batch: LineBatch) -> PathPatterns | None:
        """After the host's tdmrep.json was asked: its rules when they came after the
        first batch was taken (a seed sitemap, a recalled discovery: the host's first
        sitemap is read before the host has answered anything), else None.

        The records taken before lack ``tdm_reserved``: the caller labels them
        (``tdmrep.with_tdm``). How the lines get their fields is decided again at the next
        take (the batch's label back to what it was), now with the rules.
        """
        if not self.tdm_on or not self._tdm_read or self.tdm is not None:
            return None
        self.tdm = tdm_patterns((self._report.allows or {}).get("tdmrep"))
        if self.tdm is not None and self._decided:
            if self._labelled and self.line_labels is None:  # (the constant label)
                batch.label = self._base_label
            self._decided = self._labelled = False
            self.line_labels = None
        return self.tdm

    def label(
        self, records: list[dict[str, Any]], lines: bytearray | None, marks: tuple[int, int]
    ) -> None:
        """Set the fields on the records the last loop added: ``records[marks[0]:]``, or the
        JSON lines ``lines[marks[1]:]`` when the batch is encoded (``UrlBatch.encoded``)."""
        if not (self.label_records or self.tdm_on):
            return
        self._read_tdm()
        if lines is not None:
            if len(lines) > marks[1] and not self._labelled:
                lines[marks[1] :] = self._label_lines(bytes(lines[marks[1] :]))
            return
        robots = self._robots_fixed()
        tdm = self.tdm
        for rec in records[marks[0] :]:
            loc = rec["loc"]
            if self.label_records:
                rec["robots"] = robots if robots is not None else self.verdict(loc)
            if self.tdm_on and tdm is not None:
                rec["tdm_reserved"] = tdm.value(loc)

    def _label_lines(self, region: bytes) -> bytes:
        """``region`` (whole JSON lines) with the fields before each line's closing brace.

        A raw ``}\n`` only ends a line (JSON escapes newlines in strings). Each line's
        ``loc`` (its first key, as ``records.record`` orders them) is matched where it
        stands (``RobotsRules.lines_allowed``), or decoded for the TDMRep rules.
        """
        lines = region.split(b"}\n")
        lines.pop()  # (after the last line's end)
        constant = self._constant_label()
        if constant is not None:
            field = constant + b"}\n"
            return field.join(lines) + field
        robots: list[str | None] = [self._robots_fixed() if self.label_records else None]
        robots *= len(lines)
        if self.label_records and robots[0] is None:
            assert self.rules is not None
            flags = self.rules.lines_allowed(lines, line_loc)
            robots = [ALLOWED if ok else DISALLOWED for ok in flags]
        tdm = self.tdm
        reserved = [None if tdm is None else tdm.value(line_loc(line)) for line in lines]
        fields = [
            _label(verdict, res, self._with_tdm()) + b"}\n"
            for verdict, res in zip(robots, reserved, strict=True)
        ]
        return b"".join(map(operator.add, lines, fields))


def line_loc(line: bytes) -> str:
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
