"""Types of the compiled walker (harvester/_cparse.pyx)."""

from typing import Any

from lxml import etree

from harvester.models import Entry
from harvester.parse import UrlValues

def url_entry(
    el: etree._Element, ctx: tuple[Any, ...], parser: Any, out: list[Entry]
) -> UrlValues | None:
    """Append one ``<url>``'s ``UrlEntry`` to ``out`` (None), or return its raw values."""

def drain(parser: Any, events: Any, out: list[Entry], urlset: bool) -> None:
    """``XmlSitemapParser._drain`` for a urlset or sitemapindex (see the .pyx)."""
