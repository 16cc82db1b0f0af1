"""Types of the compiled URL loop (harvester/_chost.pyx)."""

from typing import Any

def url_entries(*args: Any) -> tuple[int, int, bool, list[Any]]:
    """Handle the ``UrlEntry`` items of a batch as ``HostWorker._entries`` does."""

def label_lines(data: bytearray, label: bytes) -> bytes:
    """``bytes(data.replace(b"}\\n", label + b"}\\n"))``, in one pass."""
