"""Types of the compiled walker (harvester/reader/_cparse.pyx)."""

from collections.abc import Callable, Iterable
from typing import Any

from lxml import etree

from harvester.models import Entry, ReadStats
from harvester.reader.entries import EntrySink, UrlBuilder, UrlValues

class EntryContext:
    """What the entry builder reads of one parser, by name (see _cparse.pxd)."""

    builder: UrlBuilder
    extensions: bool
    changefreqs: dict[str, str | None]
    priorities: dict[str, float | None]
    stats: ReadStats
    seen: set[int] | None
    cap: int
    entry_type: type

    def __init__(self, builder: UrlBuilder, sink: EntrySink) -> None: ...

def url_entry(el: etree._Element, ctx: EntryContext, out: list[Entry]) -> UrlValues | None:
    """Append one ``<url>``'s ``UrlEntry`` to ``out`` (None), or return its raw values."""

def drain(
    ctx: EntryContext,
    events: Iterable[tuple[str, Any]],
    out: list[Entry],
    root: etree._Element | None,
    handle: Callable[[etree._Element, list[Entry]], None] | None,
) -> etree._Element | None:
    """``XmlSitemapParser._drain`` for a urlset or sitemapindex (see the .pyx); the root."""
