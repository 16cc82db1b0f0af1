"""The Parquet sink: schema and values read back, row groups, parts, resume, DuckDB."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from harvester.output import parquetsink
from harvester.output.parquetsink import SCHEMA, ParquetSink
from harvester.output.parts import part_name
from harvester.urls.records import encode_records
from tests.records import RECORDS
from tests.roundtrip import read_parquet

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def records(n: int, start: int = 0) -> list[dict[str, Any]]:
    """``n`` plain records, numbered from ``start``."""
    return [
        {
            "loc": f"https://example.com/p/{i}",
            "url": f"https://example.com/p/{i}",
            "host": f"h{i % 3}.example",
            "sitemap": "https://example.com/sitemap.xml",
            "source": "sitemap",
            "lastmod": f"2024-01-{1 + i % 28:02d}T00:00:{i % 60:02d}Z" if i % 4 else None,
            "changefreq": "weekly" if i % 2 else None,
            "priority": (i % 10) / 10,
            "event": ("new", "changed", "unchanged")[i % 3],
        }
        for i in range(start, start + n)
    ]


def test_the_schema_is_the_documented_one(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out))
    sink.write(encode_records(RECORDS))
    sink.close(complete=True)
    schema = pq.read_schema(out)
    assert schema == SCHEMA
    assert schema.field("lastmod").type == pa.timestamp("us", tz="UTC")
    assert schema.field("priority").type == pa.float64()
    assert pa.types.is_dictionary(schema.field("source").type)
    assert pa.types.is_dictionary(schema.field("event").type)
    assert pa.types.is_dictionary(schema.field("since").type)
    assert pa.types.is_struct(schema.field("news").type)
    for name in ("images", "alternates", "videos"):
        kind = schema.field(name).type
        assert pa.types.is_list(kind)
        assert pa.types.is_struct(kind.value_type)


def test_values_read_back_equal_the_json_records(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out))
    sink.write(encode_records(RECORDS))
    sink.close(complete=True)
    assert read_parquet(str(out)) == RECORDS
    row = pq.read_table(out).to_pylist()[1]
    assert row["news"]["publication_date"].isoformat() == "2024-05-01T00:00:00+00:00"
    # A video's dates are timestamps too, as the news one (issue 47: dates one way).
    assert row["videos"][0]["publication_date"].isoformat() == "2024-04-30T22:00:00+00:00"
    assert row["source"] == "links"


def test_row_groups_are_whole_across_commits_and_parts(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out), row_group_rows=4)
    expected = records(23)
    for i in range(0, 23, 3):  # blocks of 3, a commit after every second block
        sink.write(encode_records(expected[i : i + 3]))
        assert sink._buffered < 4  # never more than a row group waits in memory
        if i % 2:
            sink.sync()
    parts = sorted(os.listdir(f"{out}.part"))
    assert parts == [part_name(i) for i in range(sink.mark)]
    assert sink.mark >= 3
    sink.close(complete=True)
    assert not (tmp_path / "urls.parquet.part").exists()
    meta = pq.ParquetFile(out).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4] * 5 + [3]
    assert read_parquet(str(out)) == expected


def test_one_part_is_renamed_and_no_records_is_an_empty_file(tmp_path: Path) -> None:
    one = tmp_path / "one.parquet"
    sink = ParquetSink(str(one))
    sink.write(encode_records(records(5)))
    sink.close(complete=True)
    assert pq.read_table(one).num_rows == 5
    empty = tmp_path / "empty.parquet"
    ParquetSink(str(empty)).close(complete=True)
    table = pq.read_table(empty)
    assert table.num_rows == 0
    assert table.schema == SCHEMA


def test_resume_keeps_the_committed_parts_only(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    first = ParquetSink(str(out), row_group_rows=4)
    first.write(encode_records(records(6)))
    first.sync()
    mark = first.mark
    first.write(encode_records(records(4, 6)))  # after the commit: lost in the crash
    first.sync()
    # kill -9 while writing the part after that: a torn file without a footer
    (tmp_path / "urls.parquet.part" / part_name(first.mark)).write_bytes(b"PAR1 torn")
    resumed = ParquetSink(str(out), resume_at=mark, row_group_rows=4)
    assert resumed.mark == mark
    assert sorted(os.listdir(f"{out}.part")) == [part_name(i) for i in range(mark)]
    resumed.write(encode_records(records(4, 100)))
    resumed.close(complete=True)
    assert read_parquet(str(out)) == records(6) + records(4, 100)


def test_an_interrupted_run_leaves_complete_parts(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out))
    sink.write(encode_records(records(7)))
    sink.sync()
    sink.write(encode_records(records(2, 7)))
    sink.close(complete=False)
    assert not out.exists()
    table = pq.read_table(f"{out}.part")  # the directory reads as one dataset
    assert table.num_rows == 9


def test_a_fresh_run_clears_an_old_part(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    old = ParquetSink(str(out))
    old.write(encode_records(records(3)))
    old.close(complete=False)
    sink = ParquetSink(str(out))
    sink.write(encode_records(records(2, 50)))
    sink.close(complete=True)
    assert read_parquet(str(out)) == records(2, 50)


def test_big_blocks_are_converted_in_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parquetsink, "_SLICE", 300)  # a few records a slice
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out))
    long = {**records(1)[0], "loc": "https://example.com/" + "x" * 1000}  # over a slice
    expected = [*records(10), long, *records(10, 10)]
    sink.write(encode_records(expected))
    sink.close(complete=True)
    assert read_parquet(str(out)) == expected


def test_a_lone_surrogate_is_replaced_not_fatal(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out))
    odd = {**records(1)[0], "loc": "https://example.com/\ud800"}
    sink.write(encode_records([*records(2), odd]))
    sink.close(complete=True)
    assert sink.rejected == 0
    rows = read_parquet(str(out))
    assert [r["loc"] for r in rows][2] == "https://example.com/\ufffd"
    assert rows[:2] == records(2)


def test_a_record_that_cannot_be_converted_is_named_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out))
    bad = {**records(1)[0], "url": "https://example.com/bad", "lastmod": "not a date"}
    sink.write(encode_records([*records(2), bad]))
    sink.close(complete=True)
    assert sink.rejected == 1
    assert "https://example.com/bad" in capsys.readouterr().err
    assert read_parquet(str(out)) == records(2)


def test_duckdb_reads_it(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out), row_group_rows=5)
    sink.write(encode_records(records(12)))
    sink.sync()
    sink.write(encode_records(RECORDS))
    sink.close(complete=True)
    con = duckdb.connect()
    counts = con.execute(f"select host, count(*) from '{out}' group by 1 order by 1").fetchall()
    assert counts == [("example.com", 2), ("h0.example", 4), ("h1.example", 4), ("h2.example", 4)]
    types = con.execute(
        f"select typeof(lastmod), typeof(priority), typeof(images), typeof(news.keywords)"
        f" from '{out}' limit 1"
    ).fetchone()
    assert types is not None
    assert types[:2] == ("TIMESTAMP WITH TIME ZONE", "DOUBLE")
    assert types[2].startswith("STRUCT(loc VARCHAR, caption VARCHAR")
    assert types[2].endswith(")[]")
    assert types[3] == "VARCHAR[]"
    assert con.execute(f"select count(*) from '{out}' where priority = 0.8").fetchone() == (2,)


def test_prepare_keeps_every_committed_part_until_publish(tmp_path: Path) -> None:
    """Issue 50 item 2: between ``prepare`` (the state then says "publishing") and
    ``publish`` a kill must leave both the parts and the assembled file."""
    for commits in (1, 3):  # one part (linked, not moved), several (assembled)
        out = tmp_path / f"urls{commits}.parquet"
        sink = ParquetSink(str(out), row_group_rows=4)
        for i in range(commits):
            sink.write(encode_records(records(5, 10 * i)))
            sink.sync()
        sink.prepare()
        part = tmp_path / f"urls{commits}.parquet.part"
        expected_files = sorted([*(part_name(i) for i in range(commits)), "assembled.tmp"])
        assert sorted(os.listdir(part)) == expected_files
        assert not out.exists()
        sink.publish()
        assert not part.exists()
        expected = [r for i in range(commits) for r in records(5, 10 * i)]
        assert read_parquet(str(out)) == expected


def test_a_failed_write_is_the_error_and_closing_after_it_raises_nothing(tmp_path: Path) -> None:
    """A full disk (the part is /dev/full): the write's OSError is raised; later writes
    name it; the close that follows raises nothing of its own (it was ArrowInvalid)."""
    import errno

    import pytest

    from harvester.errors import RunFailed

    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out), row_group_rows=4)
    (tmp_path / "urls.parquet.part" / part_name(0)).symlink_to("/dev/full")
    with pytest.raises(OSError, match="No space left") as info:  # (past the file's buffer)
        sink.write(encode_records(records(4000)))
    assert info.value.errno == errno.ENOSPC
    with pytest.raises(RunFailed, match="No space left"):
        sink.write(encode_records(records(8)))
    sink.close(complete=False)
    assert sink.closed
