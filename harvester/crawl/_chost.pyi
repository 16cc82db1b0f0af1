"""Types of the compiled half of the URL batch (harvester/crawl/_chost.pyx)."""

from array import array
from datetime import datetime
from typing import Any

from harvester.crawl.report import HostReport
from harvester.crawl.urlloop import Buffers
from harvester.models import Entry
from harvester.urls.dedupe import SeenSet
from harvester.urls.normalize import Rules

class UrlLoop:
    """The state of one host's URL loop (``urlloop.UrlLoop``), in C."""

    seen: SeenSet | None
    label: bytes | None
    labels: Any  # _crobots.LineLabels or None
    replayed: int
    @property
    def host(self) -> str: ...
    @property
    def rules(self) -> Rules: ...
    @property
    def report(self) -> HostReport: ...
    @property
    def records(self) -> list[dict[str, Any]]: ...
    @property
    def fps(self) -> array[int]: ...
    @property
    def lastmods(self) -> array[int] | None: ...
    @property
    def encoded(self) -> bytearray | None: ...
    @property
    def urls(self) -> bytearray | None: ...
    @property
    def sample_lastmods(self) -> list[datetime | None] | None: ...
    @property
    def sample_raws(self) -> list[str | None] | None: ...
    @property
    def listed(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def cap_hit(self) -> bool: ...
    @property
    def home(self) -> tuple[str, ...] | None: ...
    def __init__(
        self,
        host: str,
        rules: Rules,
        report: HostReport,
        cap: int,
        *,
        filtering: bool,
        encoded: bool,
        ledger_text: bool,
        audit: bool,
    ) -> None: ...
    def take(self, entries: list[Entry], sitemap: str) -> list[Entry]: ...
    def at_home(self, authorities: tuple[str, ...]) -> None: ...
    def new_file(self) -> None: ...
    def new_read(self) -> None: ...
    def hand_over(self) -> Buffers: ...

def url_entries(loop: UrlLoop, entries: list[Entry], sitemap: str) -> list[Entry]:
    """Handle the ``UrlEntry`` items of ``entries`` as ``urlloop.PyUrlLoop.take`` does."""

def label_lines(data: bytearray, label: bytes) -> bytes:
    """``bytes(data.replace(b"}\\n", label + b"}\\n"))``, in one pass."""
