"""Types of the compiled half of the URL batch (harvester/crawl/_chost.pyx)."""

from harvester.crawl.batch import UrlBatch
from harvester.models import Entry

def url_entries(batch: UrlBatch, entries: list[Entry], sitemap: str) -> list[Entry]:
    """Handle the ``UrlEntry`` items of ``entries`` as ``UrlBatch._python_loop`` does."""

def label_lines(data: bytearray, label: bytes) -> bytes:
    """``bytes(data.replace(b"}\\n", label + b"}\\n"))``, in one pass."""
