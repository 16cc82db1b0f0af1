"""``output.concat``: several outputs of one format into one, on real files."""

from __future__ import annotations

import csv
import json
from typing import TYPE_CHECKING

import pytest

from harvester.errors import ConfigError
from harvester.output.concat import concat
from harvester.output.csvsink import COLUMNS
from harvester.output.formats import make_sink

if TYPE_CHECKING:
    from pathlib import Path


def _record(n: int) -> bytes:
    url = f"http://127.0.0.2/p/{n}"
    body = {"loc": url, "url": url, "host": "127.0.0.2", "sitemap": None, "lastmod": None}
    # A line break inside a field: a CSV row over two lines, a JSON line with \\n escaped.
    body["changefreq"] = "daily\nweekly" if n % 3 == 0 else None
    return json.dumps(body).encode() + b"\n"


def _files(tmp_path: Path, fmt: str, sizes: tuple[int, ...]) -> tuple[list[str], list[str]]:
    """One finished file of ``fmt`` per size (records numbered on); their paths and URLs."""
    paths, urls, n = [], [], 0
    for i, size in enumerate(sizes):
        path = str(tmp_path / f"in{i}.{fmt}")
        sink = make_sink(path, fmt, resume_at=None, row_group_rows=4)  # type: ignore[arg-type]
        for _ in range(size):
            sink.write(_record(n), 1)
            urls.append(f"http://127.0.0.2/p/{n}")
            n += 1
        sink.close(complete=True)
        paths.append(path)
    return paths, urls


def _urls(path: Path, fmt: str) -> list[str]:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return [str(u) for u in pq.read_table(path).column("url").to_pylist()]
    with open(path, encoding="utf-8", newline="") as fh:
        if fmt == "csv":
            return [row["url"] for row in csv.DictReader(fh)]
        return [json.loads(line)["url"] for line in fh]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_files_of_one_format_concatenate_in_order(tmp_path: Path, fmt: str) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    paths, urls = _files(tmp_path, fmt, (7, 0, 10))
    out = tmp_path / f"all.{fmt}"
    assert concat(paths, fmt, str(out), fmt) == out.stat().st_size  # type: ignore[arg-type]
    assert _urls(out, fmt) == urls
    assert not (tmp_path / f"all.{fmt}.part").exists()
    if fmt == "csv":
        assert out.read_text().count(",".join(COLUMNS)) == 1


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_json_lines_become_another_format(tmp_path: Path, fmt: str) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    paths, urls = _files(tmp_path, "jsonl", (5, 6))
    out = tmp_path / f"all.{fmt}"
    concat(paths, "jsonl", str(out), fmt)  # type: ignore[arg-type]
    assert _urls(out, fmt) == urls


def test_no_file_gives_an_empty_output_with_its_header(tmp_path: Path) -> None:
    concat([], "csv", str(tmp_path / "none.csv"), "csv")
    assert (tmp_path / "none.csv").read_text().splitlines() == [",".join(COLUMNS)]


def test_csv_into_json_lines_and_parquet_to_stdout_are_refused(tmp_path: Path) -> None:
    paths, _ = _files(tmp_path, "csv", (2,))
    with pytest.raises(ConfigError, match="the shards wrote csv"):
        concat(paths, "csv", str(tmp_path / "x.jsonl"), "jsonl")
    assert not (tmp_path / "x.jsonl").exists()
    with pytest.raises(ConfigError, match="standard output"):
        concat([], "parquet", "-", "parquet")
