"""Types of a record's JSON line (harvester/crawl/_crecords.pyx): its C functions are
_chost's; ``label_lines`` is also ``_chost.label_lines``."""

def label_lines(data: bytearray, label: bytes) -> bytes:
    """``data`` (JSON lines) with ``label`` before each line's closing brace."""
