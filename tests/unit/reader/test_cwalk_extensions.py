"""Every extension (image, xhtml:link, video, news) is read by the compiled walker.

tests/unit/reader/test_cparse.py checks that the compiled path reads what the Python
path reads; this checks that an extension entry stays on the compiled path: the
Python walker (``entries.UrlBuilder.values``) is not called for a ``<url>`` whose
extensions hold plain text, through the push parser (``_cpush``) and through lxml's
(``_cparse.drain``), and the values it builds are the ones ``parse_news`` and
``parse_video`` make. Nested markup in a value still goes to Python, as before.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from harvester.models import News, UrlEntry, Video
from harvester.reader import entries as entriesmod
from harvester.reader import parse
from harvester.reader.sitemap import read_bytes
from tests.compiled import compiled_module
from tests.unit.reader.documents import CORNERS, urlset

if TYPE_CHECKING:
    from lxml import etree

    from harvester.reader.entries import UrlValues

cparse = compiled_module("_cparse")

PLAIN_EXTENSIONS = urlset(
    "<loc>https://e.com/a</loc><image:image><image:loc>https://i.e.com/1.jpg</image:loc>"
    "</image:image>"
    '<xhtml:link rel="alternate" hreflang="de" href="https://e.com/de/a"/>',
    "<loc>https://e.com/b</loc><news:news><news:publication><news:name>The Daily"
    "</news:name><news:language>en</news:language></news:publication>"
    "<news:publication_date>2024-05-01T10:00:00Z</news:publication_date>"
    "<news:title>Title</news:title><news:keywords>a, b</news:keywords></news:news>",
    "<loc>https://e.com/c</loc><video:video><video:title>V</video:title>"
    "<video:publication_date>2024-05-01</video:publication_date><video:tag>t</video:tag>"
    "</video:video>",
    "<loc>https://e.com/d</loc><news:news><news:publication_date>2024-05-01 10:00:00+02:00"
    "</news:publication_date></news:news>",
)


class Counted:
    """How many ``<url>``s the Python walker (``UrlBuilder.values``) read."""

    calls = 0


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    counter = Counted()
    values = entriesmod.UrlBuilder.values

    def counting(builder: entriesmod.UrlBuilder, el: etree._Element) -> UrlValues:
        counter.calls += 1
        return values(builder, el)

    monkeypatch.setattr(entriesmod.UrlBuilder, "values", counting)
    return counter


@pytest.mark.parametrize("push", [True, False], ids=["cpush", "lxml"])
def test_extension_entries_never_reach_the_python_walker(
    push: bool, counted: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not push:
        monkeypatch.setattr(parse, "_urlset_push", None)
    assert parse._url_entry is cparse.url_entry
    found, result = read_bytes([PLAIN_EXTENSIONS])
    assert result.error is None
    assert [e.loc for e in found] == [f"https://e.com/{c}" for c in "abcd"]
    assert counted.calls == 0
    assert all(type(e) is UrlEntry for e in found)


def test_what_the_walker_builds(counted: Counted) -> None:
    # Right, not only equal to the Python path: the values parse_news/parse_video make.
    found, _ = read_bytes([PLAIN_EXTENSIONS])
    assert all(isinstance(e, UrlEntry) for e in found)
    a, b, c, d = (e for e in found if isinstance(e, UrlEntry))
    assert a.images[0].loc == "https://i.e.com/1.jpg"
    assert a.alternates == (("de", "https://e.com/de/a"),)
    assert b.news == News(
        name="The Daily",
        language="en",
        publication_date=datetime(2024, 5, 1, 10, tzinfo=UTC),
        publication_date_raw="2024-05-01T10:00:00Z",
        title="Title",
        keywords=("a", "b"),
    )
    assert c.videos == (Video(title="V", publication_date="2024-05-01", tags=("t",)),)
    # Not W3C: the lenient parse decides, as parse_lastmod does.
    assert d.news is not None
    assert d.news.publication_date == datetime(2024, 5, 1, 8, tzinfo=UTC)
    assert d.news.publication_date_raw == "2024-05-01 10:00:00+02:00"
    assert counted.calls == 0


def test_nested_markup_in_a_field_goes_to_python(
    counted: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    # news in full: its last two <url>s hold markup inside a news value.
    compiled, _ = read_bytes([CORNERS["news in full"]])
    assert counted.calls == 2
    monkeypatch.setattr(parse, "_url_entry", None)
    pure, _ = read_bytes([CORNERS["news in full"]])
    assert compiled == pure
    news = [e.news for e in compiled if isinstance(e, UrlEntry)]
    assert news[0] is not None
    assert (news[0].name, news[0].title, news[0].keywords) == (
        "The Daily",
        "T & U",
        ("a", "b", "c"),
    )
    assert news[0].access == "Subscription"
