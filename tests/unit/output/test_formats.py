"""Output formats: choosing one (``formats.py``), the CSV sink and the ``.part`` cut-back."""

from __future__ import annotations

import csv
import io
import sys
from typing import TYPE_CHECKING, Any

import pytest

from harvester.config import load_config
from harvester.errors import ConfigError
from harvester.output.csvsink import COLUMNS, CsvSink
from harvester.output.formats import make_sink, output_sink, resolve_format
from harvester.output.parts import cut_back, part_name
from harvester.output.sink import JsonlSink
from harvester.urls.records import encode_records
from tests.records import RECORDS
from tests.roundtrip import read_csv

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("path", "fmt", "expected"),
    [
        ("urls.jsonl", "", "jsonl"),
        ("urls.csv", "", "csv"),
        ("out/URLS.PARQUET", "", "parquet"),
        ("urls.txt", "", "jsonl"),
        ("-", "", "jsonl"),
        ("urls.jsonl", "csv", "csv"),  # an explicit format wins over the extension
        ("-", "csv", "csv"),
    ],
)
def test_the_format_is_given_or_read_from_the_extension(path: str, fmt: str, expected: str) -> None:
    assert resolve_format(path, fmt) == expected


def test_config_format_is_validated_and_row_groups_positive() -> None:
    assert load_config(None, {"output.format": "parquet"}).output.format == "parquet"
    with pytest.raises(ConfigError, match=r"output\.format"):
        load_config(None, {"output.format": "xml"})
    with pytest.raises(ConfigError, match=r"output\.row_group_rows"):
        load_config(None, {"output.row_group_rows": 0})


def test_output_sink_follows_the_config(tmp_path: Path) -> None:
    cfg = load_config(None, {"output.format": "csv"})
    sink = output_sink(cfg, str(tmp_path / "urls.jsonl"))
    assert isinstance(sink, CsvSink)
    sink.close(complete=False)
    plain = output_sink(load_config(None, {}), str(tmp_path / "urls.out"))
    assert isinstance(plain, JsonlSink)
    plain.close(complete=False)


def test_parquet_to_stdout_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="standard output"):
        make_sink("-", "parquet", resume_at=None, row_group_rows=10)


def test_parquet_without_pyarrow_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow → ImportError
    monkeypatch.delitem(sys.modules, "harvester.output.parquetsink", raising=False)
    with pytest.raises(ConfigError, match=r"harvester-sitemaps\[parquet\]") as info:
        make_sink(str(tmp_path / "u.parquet"), "parquet", resume_at=None, row_group_rows=10)
    assert info.value.key == "output.format"
    assert not (tmp_path / "u.parquet.part").exists()


def test_csv_round_trip_keeps_commas_quotes_and_line_breaks(tmp_path: Path) -> None:
    out = tmp_path / "urls.csv"
    sink = CsvSink(str(out))
    sink.write(encode_records(RECORDS))
    assert sink.records == 2
    sink.close(complete=True)
    assert not (tmp_path / "urls.csv.part").exists()
    raw = out.read_bytes()
    assert raw.startswith(",".join(COLUMNS).encode() + b"\r\n")
    assert b'"https://example.com/a,b""c""?q=1, 2"' in raw  # RFC 4180: quoted, quotes doubled
    assert read_csv(str(out)) == RECORDS


def test_csv_nested_fields_are_json_text_and_nulls_empty(tmp_path: Path) -> None:
    out = tmp_path / "urls.csv"
    sink = CsvSink(str(out))
    sink.write(encode_records(RECORDS))
    sink.close(complete=True)
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"), newline="")))
    assert (
        rows[0]["images"]
        == '[{"loc":"https://example.com/i.png","caption":"say \\"cheese\\", all"}]'
    )
    assert rows[0]["priority"] == "0.8"
    assert rows[1]["lastmod"] == rows[1]["priority"] == rows[1]["images"] == ""
    assert rows[1]["since"] == "undated"


def test_csv_resume_cuts_back_to_the_mark_and_keeps_one_header(tmp_path: Path) -> None:
    out = tmp_path / "urls.csv"
    sink = CsvSink(str(out))
    sink.write(encode_records(RECORDS[:1]))
    sink.sync()
    mark = sink.mark
    sink.write(encode_records(RECORDS[1:]))  # never committed: a crash loses it
    sink.close(complete=False)
    resumed = CsvSink(str(out), resume_at=mark)
    resumed.write(encode_records(RECORDS[1:]))
    resumed.close(complete=True)
    assert read_csv(str(out)) == RECORDS
    assert out.read_bytes().count(b"loc,url,host") == 1


def test_csv_resume_from_nothing_committed_writes_the_header_again(tmp_path: Path) -> None:
    out = tmp_path / "urls.csv"
    first = CsvSink(str(out))
    first.write(encode_records(RECORDS))
    first.close(complete=False)
    resumed = CsvSink(str(out), resume_at=0)
    resumed.write(encode_records(RECORDS[:1]))
    resumed.close(complete=True)
    assert read_csv(str(out)) == RECORDS[:1]


def test_csv_to_stdout(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    sink = CsvSink("-")
    sink.write(encode_records(RECORDS[:1]))
    sink.close(complete=True)
    lines = capsysbinary.readouterr().out.split(b"\r\n")
    assert lines[0] == ",".join(COLUMNS).encode()
    assert lines[1].startswith(b'"https://example.com/a,b""c""')


def test_a_lone_surrogate_becomes_a_replacement_character_in_csv(tmp_path: Path) -> None:
    out = tmp_path / "urls.csv"
    sink = CsvSink(str(out))
    sink.write(encode_records([{**RECORDS[0], "loc": "https://example.com/\ud800"}]))
    sink.close(complete=True)
    assert read_csv(str(out))[0]["loc"] == "https://example.com/\ufffd"


def test_cut_back_truncates_a_file_and_drops_parts_past_the_mark(tmp_path: Path) -> None:
    part = tmp_path / "urls.jsonl.part"
    part.write_bytes(b"0123456789")
    cut_back(str(part), 4)
    assert part.read_bytes() == b"0123"
    parts = tmp_path / "urls.parquet.part"
    parts.mkdir()
    for i in range(4):
        (parts / part_name(i)).write_bytes(b"x")
    (parts / "notes.txt").write_text("the user's own")
    cut_back(str(parts), 2)
    assert sorted(p.name for p in parts.iterdir()) == ["notes.txt", part_name(0), part_name(1)]
    cut_back(str(tmp_path / "nothing.part"), 3)  # nothing there: nothing to do


def _unfinished_run(tmp_path: Path, output: str, mark: int) -> None:
    """A state file whose last run wrote ``output`` and committed ``mark``, then died."""
    from harvester.state.store import StateStore

    store = StateStore(str(tmp_path / "state.sqlite"))
    store.start_run(emit="all", output=output, resume=True)
    store.commit(mark)
    store.close()


def _resume(tmp_path: Path, output: str, **cfg: Any) -> Any:
    from harvester.output.opening import open_sink
    from harvester.state.store import StateStore

    store = StateStore(str(tmp_path / "state.sqlite"))
    store.start_run(emit="all", output=output, resume=True)
    try:
        return open_sink(output, store, load_config(None, cfg))
    finally:
        store.close()


def test_a_resume_in_another_format_on_the_same_path_is_refused(tmp_path: Path) -> None:
    out = str(tmp_path / "urls.out")
    first = make_sink(out, "parquet", resume_at=None, row_group_rows=10)
    first.write(encode_records(RECORDS))
    first.sync()
    first.close(complete=False)
    _unfinished_run(tmp_path, out, first.mark)
    with pytest.raises(ConfigError, match="another format") as info:
        _resume(tmp_path, out, **{"output.format": "csv"})
    assert info.value.key == "output.format"
    sink = _resume(tmp_path, out, **{"output.format": "parquet"})  # its own format: resumed
    assert sink.mark == 1
    sink.close(complete=True)


def test_a_csv_run_resumed_into_another_output_is_cut_back(tmp_path: Path) -> None:
    first = str(tmp_path / "first.csv")
    sink = CsvSink(first)
    sink.write(encode_records(RECORDS[:1]))
    sink.sync()
    mark = sink.mark
    sink.write(encode_records(RECORDS[1:]))  # not committed
    sink.close(complete=False)
    _unfinished_run(tmp_path, first, mark)
    second = _resume(tmp_path, str(tmp_path / "second.parquet"))
    assert second.mark == 0  # a new output, in its own format (from its extension)
    second.close(complete=True)
    assert read_csv(first + ".part") == RECORDS[:1]


def test_rows_made_in_a_worker_are_the_rows_the_sink_makes(tmp_path: Path) -> None:
    from harvester.output.csvsink import csv_rows
    from harvester.output.formats import block_encoder

    encode = block_encoder("csv")
    assert encode is csv_rows
    assert block_encoder("jsonl") is None
    assert block_encoder("parquet") is None
    here, there = tmp_path / "here.csv", tmp_path / "there.csv"
    a, b = CsvSink(str(here)), CsvSink(str(there))
    a.write(encode_records(RECORDS))
    b.write_encoded(encode(encode_records(RECORDS)), 2)
    b.write_encoded(encode(encode_records(RECORDS[:1])))  # no count given: counted
    assert (a.records, b.records) == (2, 3)
    a.close(complete=True)
    b.close(complete=True)
    assert read_csv(str(there)) == [*read_csv(str(here)), RECORDS[0]]


def test_the_format_is_resolved_once_for_the_workers() -> None:
    from harvester.output.formats import resolved

    cfg = load_config(None, {})
    assert resolved(cfg, "out/urls.csv").output.format == "csv"
    assert resolved(cfg, "-").output.format == "jsonl"
    explicit = load_config(None, {"output.format": "parquet"})
    assert resolved(explicit, "urls.csv") is explicit


def test_holds_says_whether_a_part_still_has_what_was_committed(tmp_path: Path) -> None:
    from harvester.output.parts import holds

    part = tmp_path / "urls.jsonl.part"
    assert holds(str(part), 0, parquet=False)  # nothing committed: nothing to miss
    assert not holds(str(part), 5, parquet=False)  # committed, and gone
    part.write_bytes(b"0123")
    assert not holds(str(part), 5, parquet=False)  # shorter than committed
    assert holds(str(part), 4, parquet=False)
    parts = tmp_path / "urls.parquet.part"
    parts.mkdir()
    for i in (0, 2):
        (parts / part_name(i)).write_bytes(b"x")
    assert holds(str(parts), 1, parquet=True)
    assert not holds(str(parts), 2, parquet=True)  # part 1 is missing
    assert not holds(str(part), 1, parquet=True)  # a file where parts belong


def test_publish_leftover_renames_what_a_stopped_close_left(tmp_path: Path) -> None:
    from harvester.output.parts import ASSEMBLED, publish_leftover

    out = tmp_path / "urls.jsonl"
    assert not publish_leftover(str(out), parquet=False)  # neither there: lost
    (tmp_path / "urls.jsonl.part").write_bytes(b"x\n")
    assert publish_leftover(str(out), parquet=False)  # renamed now
    assert out.read_bytes() == b"x\n"
    assert publish_leftover(str(out), parquet=False)  # renamed before: there it is
    pq_out = tmp_path / "urls.parquet"
    parts = tmp_path / "urls.parquet.part"
    parts.mkdir()
    (parts / part_name(0)).write_bytes(b"part")
    (parts / ASSEMBLED).write_bytes(b"whole")
    assert publish_leftover(str(pq_out), parquet=True)
    assert pq_out.read_bytes() == b"whole"
    assert not parts.exists()  # its parts went with it
