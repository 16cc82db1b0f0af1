"""Types of the compiled urlset reader (harvester/reader/_cpush.pyx)."""

from harvester.models import Entry
from harvester.reader._cparse import EntryContext

MISSING: str | None
AVAILABLE: bool

def fast_path(on: bool | None = None) -> bool:
    """Whether new readers take the fast path; ``on``: set it (returns the old value)."""

class UrlsetPush:
    """One urlset document's libxml2 push parser."""

    fast_urls: int  # <url>s read by the fast path

    def __init__(self, ctx: EntryContext, encoding: str | None = None) -> None: ...
    def feed(self, data: bytes | memoryview, out: list[Entry]) -> tuple[str, int, int] | None:
        """Parse ``data``; None, or the error as (message, line, column)."""

    def close(self, out: list[Entry]) -> tuple[str, int, int] | None:
        """End of input; None, or the error as (message, line, column)."""

    def held(self) -> int:
        """How many nodes the root element holds now."""
