"""Types of the compiled lastmod parse and format (harvester/_cdates.pyx)."""

from datetime import datetime

def w3c(raw: str) -> datetime | None:
    """The UTC datetime of a strict W3C lastmod in a common shape; None: not handled here."""

def format_utc(dt: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` in UTC, as ``dates.format_utc``."""

def format_utc_seconds(dt: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` in UTC, as ``dates.format_utc_seconds``."""
