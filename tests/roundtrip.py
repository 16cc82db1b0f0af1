"""Read the CSV and Parquet outputs back into the JSON records they were written from.

Used by the format tests to compare every format with the JSON Lines run: a
record read back from CSV or Parquet must equal the JSON record exactly (the
only mapping is the one the README documents: empty CSV fields and Parquet
nulls are absent or null fields, Parquet timestamps are the ISO strings).
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from typing import Any

SCALARS = ("loc", "url", "host", "sitemap", "source", "lastmod", "changefreq", "priority")
NESTED = ("images", "alternates", "videos", "news")
LABELS = ("event", "since", "robots")  # (robots: policy.verdicts, on by default)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.astimezone(UTC).replace(tzinfo=None).isoformat()
    return text + "Z"


def _compact(item: dict[str, Any]) -> dict[str, Any]:
    """A struct's fields without the nulls and empty lists the JSON leaves out."""
    return {k: v for k, v in item.items() if v is not None and v != []}


def from_parquet_row(row: dict[str, Any]) -> dict[str, Any]:
    """One ``to_pylist()`` row of the Parquet output as the JSON record it came from."""
    out: dict[str, Any] = {k: row[k] for k in SCALARS}
    out["lastmod"] = _iso(row["lastmod"])
    for key in ("images", "alternates", "videos"):
        if row[key] is not None:
            out[key] = [_compact(item) for item in row[key]]
    for video in out.get("videos", ()):
        for key in ("publication_date", "expiration_date"):
            if key in video:
                video[key] = _iso(video[key])
    if row["news"] is not None:
        news = dict(row["news"])
        news["publication_date"] = _iso(news["publication_date"])
        required = {k: news.pop(k) for k in ("name", "language", "publication_date", "title")}
        out["news"] = {**required, **_compact(news)}
    for key in LABELS:
        if row[key] is not None:
            out[key] = row[key]
    if row["tdm_reserved"] is not None:
        out["tdm_reserved"] = row["tdm_reserved"]
    return out


def from_csv_row(row: dict[str, str]) -> dict[str, Any]:
    """One ``csv.DictReader`` row of the CSV output as the JSON record it came from."""
    out: dict[str, Any] = {k: row[k] or None for k in SCALARS}
    out["priority"] = json.loads(row["priority"]) if row["priority"] else None
    for key in NESTED:
        if row[key]:
            out[key] = json.loads(row[key])
    for key in LABELS:
        if row[key]:
            out[key] = row[key]
    if row["tdm_reserved"]:
        out["tdm_reserved"] = row["tdm_reserved"] == "true"
    return out


def read_csv(path: str) -> list[dict[str, Any]]:
    """Every record of a CSV output (the header checked: every row has every column)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, strict=True))
    assert all(None not in row for row in rows)  # no row longer than the header
    return [from_csv_row(row) for row in rows]


def read_parquet(path: str) -> list[dict[str, Any]]:
    """Every record of a Parquet output."""
    import pyarrow.parquet as pq

    return [from_parquet_row(row) for row in pq.read_table(path).to_pylist()]


def read_jsonl(path: str) -> list[dict[str, Any]]:
    """Every record of a JSON Lines output."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]
