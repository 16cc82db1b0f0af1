"""Types of the compiled walker (harvester/_cparse.pyx)."""

from lxml import etree

from harvester.parse import UrlValues

def url_values(el: etree._Element, extensions: bool) -> UrlValues | None:
    """The raw values of one ``<url>``; None: let the Python path read this one."""
