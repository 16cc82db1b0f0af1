"""Selection: which of a host's records ``--emit`` and ``--since`` keep, and their labels.

In: a batch's fingerprints, lastmod epochs and records (dicts) or JSON lines, with a
state file the host's memory and the ledger (``Ledger``: ``state.ledger.LedgerReader``).
Out: the records or lines to write, labelled (``event``, ``since``), the ledger rows of
every URL listed (also those not written: the ledger must know they are still listed),
and the events counted into the host report. ``UrlBatch`` (``batch.py``) owns one.
"""

from __future__ import annotations

from array import array
from collections import Counter
from itertools import chain, compress, groupby, repeat
from typing import TYPE_CHECKING, Any, Protocol

from harvester import compiled
from harvester.state.chunks import NO_LASTMOD
from harvester.state.ledger import EMIT_EVENTS
from harvester.state.memory import HostMemory
from harvester.state.rows import LedgerRows

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvester.crawl.report import HostReport

__all__ = ["Ledger", "Selection"]

_chost = compiled.load("_chost")
# Its one-pass labelling of a batch's lines (``Selection.select_lines``); None:
# bytearray.replace.
_label_lines: Callable[[bytearray, bytes], bytes] | None = (
    _chost.label_lines if _chost is not None else None
)

# The labels ``select_lines`` adds to a line, as orjson writes the keys ``select_records``
# adds to a record.
_EVENT_LABELS = {e: b',"event":"%s"' % e.encode() for e in EMIT_EVENTS["all"] | {"removed"}}
_SINCE_LABELS = {s: b',"since":"%s"' % s.encode() for s in ("after", "undated", "unverified")}


class Ledger(Protocol):
    """What selection asks of the state file (``ledger.LedgerReader``)."""

    def fresh(self, memory: HostMemory) -> bool: ...  # noqa: D102

    def events(  # noqa: D102
        self, memory: HostMemory, fps: array[int], lastmods: array[int]
    ) -> list[str | None]: ...

    def carry(  # noqa: D102
        self, memory: HostMemory, fps: array[int], lastmods: array[int]
    ) -> array[int]: ...


class Selection:
    """Which records ``--emit``/``--since`` keep, and their labels (event, since).

    ``ledger`` None: ``--since`` alone. ``memory`` and ``unverified`` come from the
    state file once the host's memory is read (``UrlBatch.remember``).
    """

    __slots__ = ("ledger", "memory", "since", "unverified", "wanted")

    def __init__(self, ledger: Ledger | None, wanted: frozenset[str], since: int | None) -> None:
        self.ledger = ledger
        self.wanted = wanted
        self.since = since
        self.memory = HostMemory()
        self.unverified = False  # the host's lastmod is not trusted: no lastmod filter

    def every_line_label(self, encoded: bool) -> bytes | None:
        """The label of every line of this host, when the compiled loop may write it: a
        host new to the state file, each of its URLs kept as ``new`` (``labels``' one
        event for a whole batch), its lines made by the loop. Else None.

        Why: ``select_lines`` otherwise inserts it into each line of each batch
        afterwards, a pass and a copy of every byte.
        """
        ledger = self.ledger
        if ledger is None or not encoded or self.since is not None:
            return None
        if "new" not in self.wanted or not ledger.fresh(self.memory):
            return None
        return _EVENT_LABELS["new"]

    def select_records(
        self,
        report: HostReport,
        records: list[dict[str, Any]],
        fps: array[int],
        lastmods: array[int],
    ) -> tuple[list[dict[str, Any]], LedgerRows | None]:
        """Label records with their event and keep those ``--emit``/``--since`` ask for.

        Returns the records to write and the ledger rows of every URL listed (also
        the ones not written: the ledger must know they are still listed).
        """
        runs = [(s, len(list(group))) for s, group in groupby(r["sitemap"] for r in records)]
        urls = [r["url"] for r in records]
        kept, rows, every = self.labels(report, fps, lastmods, urls, runs)
        if every is not None:
            for rec in records:
                rec["event"] = every
            return records, rows
        out: list[dict[str, Any]] = []
        for i, event, since in kept:
            rec = records[i]
            if event is not None:
                rec["event"] = event
            if since is not None:
                rec["since"] = since
            out.append(rec)
        return out, rows

    def select_lines(
        self,
        report: HostReport,
        data: bytearray,
        fps: array[int],
        lastmods: array[int],
        urls: tuple[bytearray, list[int]] | None,
        runs: list[tuple[str, int]] | None,
        written: bytes | None,
    ) -> tuple[bytes | bytearray, int, LedgerRows | None]:
        """``select_records`` for a batch the compiled loop wrote as JSON lines.

        ``urls`` and ``runs``: with a state file, the batch's canonical URLs as text
        and its sitemaps' runs; ``written``: the label the loop already wrote into
        every line. Returns the kept lines, labelled (``data`` itself when it needs
        no change), their count and the ledger rows. A label goes before its line's
        closing brace, in the order ``select_records`` adds the keys (``event``, then
        ``since``): the bytes are those of the labelled dicts.
        """
        kept, rows, every = self.labels(report, fps, lastmods, urls, runs)
        if every is not None:
            label = _EVENT_LABELS[every]
            if label == written:
                return data, len(fps), rows  # the compiled loop wrote it
            # One label for every line: one pass in C. A raw "}\n" ends a line and
            # nothing else (JSON escapes a newline inside a string).
            if _label_lines is not None:
                return _label_lines(data, label), len(fps), rows
            return bytes(data.replace(b"}\n", label + b"}\n")), len(fps), rows
        assert not written  # (only where every line gets one label)
        lines = data.split(b"\n")  # one more than the records: the empty tail
        out = bytearray()
        for i, event, since in kept:
            line = lines[i]
            if event is not None or since is not None:
                del line[-1]  # the closing brace (the split made this copy of the line)
                if event is not None:
                    line += _EVENT_LABELS[event]
                if since is not None:
                    line += _SINCE_LABELS[since]
                line += b"}"
            out += line
            out += b"\n"
        return bytes(out), len(kept), rows

    def labels(
        self,
        report: HostReport,
        fps: array[int],
        lastmods: array[int],
        urls: list[str] | tuple[bytearray, list[int]] | None,
        sitemaps: list[tuple[str, int]] | None,
    ) -> tuple[list[tuple[int, str | None, str | None]], LedgerRows | None, str | None]:
        """Decide, for a batch, which records ``--emit``/``--since`` keep and their labels.

        In: the batch's fingerprints, lastmod epochs and, with a state file, its
        canonical URLs (a list, or the compiled loop's text and run ends: see
        ``LedgerRows.pack_text``) and sitemaps as runs (for the ledger rows). Out:
        ``(index, event, since)`` of each record to write (a label None: that key is
        not added); the ledger rows of every URL listed but the replayed ones (also
        those not written: the ledger must know they are still listed); and, when
        every record is kept with one same event and no ``since`` (a host new to the
        state file, say), that event, with no per-record list. Counts the events
        into the report.
        """
        rows: LedgerRows | None = None
        events: list[str | None] = []
        if self.ledger is not None and urls is not None and sitemaps is not None:
            rows, events, every = self._ledger_rows(report, fps, lastmods, urls, sitemaps)
            if every is not None:
                if every in self.wanted:
                    return [], rows, every
                report.urls -= len(lastmods)
                return [], rows, None
        return self._keep(report, lastmods, events), rows, None

    def _ledger_rows(
        self,
        report: HostReport,
        fps: array[int],
        lastmods: array[int],
        urls: list[str] | tuple[bytearray, list[int]],
        sitemaps: list[tuple[str, int]],
    ) -> tuple[LedgerRows, list[str | None], str | None]:
        """The batch's ledger rows and events, counted into the report.

        Returns ``(rows, events, every)``: ``every`` is the one event of the whole
        batch when there is one and no ``--since`` (``events`` then may be empty).
        """
        assert self.ledger is not None
        signed_fps = array("q", fps.tobytes())  # same bits, as SQLite's signed integers
        events: list[str | None] = []
        # A host new to the ledger (every host of a first run) needs no lookup, and
        # no count of a list of "new".
        fresh = self.ledger.fresh(self.memory)
        stored = lastmods  # the rows' lastmods (the filter reads this run's)
        if not fresh:
            events = self.ledger.events(self.memory, signed_fps, lastmods)
            stored = self.ledger.carry(self.memory, signed_fps, lastmods)
        counts: Counter[str | None] = Counter({"new": len(lastmods)}) if fresh else Counter(events)
        replayed = counts.pop(None, 0)
        for name, count in counts.items():
            setattr(report, name, getattr(report, name) + count)  # type: ignore[arg-type]
        if replayed:
            # Recorded by this run before it was cut short: in the output and ledger.
            report.replayed += replayed
            if isinstance(urls, tuple):  # (rare: a resumed host) as a list, then
                urls = bytes(urls[0]).decode("utf-8", "surrogatepass").split("\n")[:-1]
            keep = [event is not None for event in events]
            each = chain.from_iterable(repeat(s, n) for s, n in sitemaps)  # row by row
            runs = [(s, len(list(g))) for s, g in groupby(compress(each, keep))]
            rows = LedgerRows.pack(
                array("q", compress(signed_fps, keep)),
                list(compress(urls, keep)),
                array("q", compress(stored, keep)),
                runs,
            )
            return rows, events, None
        if isinstance(urls, tuple):
            rows = LedgerRows.pack_text(signed_fps, *urls, stored, sitemaps)
        else:
            rows = LedgerRows.pack(signed_fps, urls, stored, sitemaps)
        if self.since is None and len(counts) == 1:
            (only,) = counts
            if self.unverified and only != "new":
                only = "unverified"
            return rows, events, only
        if fresh:
            events = ["new"] * len(lastmods)  # labelled one by one
        return rows, events, None

    def _keep(
        self, report: HostReport, lastmods: array[int], events: list[str | None]
    ) -> list[tuple[int, str | None, str | None]]:
        """``(index, event, since)`` of each record to write; the rest leave ``report.urls``,
        and those ``--since`` leaves out are counted as ``filtered`` (as ``[filters]``' are)."""
        wanted, since, unverified = self.wanted, self.since, self.unverified
        out: list[tuple[int, str | None, str | None]] = []
        before = 0  # left out by --since
        for i, lastmod in enumerate(lastmods):
            event: str | None = None
            label: str | None = None
            if events:
                event = events[i]
                if event is None:
                    continue  # replayed (counted in _ledger_rows)
                if unverified and event != "new":
                    event = "unverified"  # its lastmod cannot say whether it changed
                if event not in wanted:
                    continue
            if since is not None:
                if unverified:
                    label = "unverified"  # not filtered by a lastmod that may lie
                elif lastmod == NO_LASTMOD:
                    label = "undated"  # may have changed: the caller decides
                elif lastmod <= since:
                    before += 1
                    continue
                else:
                    label = "after"
            out.append((i, event, label))
        report.urls -= len(lastmods) - len(out)
        report.filtered += before
        return out
