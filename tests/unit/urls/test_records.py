"""The output record's JSON line: ``encode_record`` and ``encode_records`` (``urls.records``)."""

from __future__ import annotations

import json

from harvester.urls.records import encode_record, encode_records
from tests.records import sample_record


def test_encode_record_is_one_utf8_json_line_in_field_order() -> None:
    rec = sample_record()
    line = encode_record(rec)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1  # the newline in the caption is escaped
    assert "bücher".encode() in line  # no \u escapes
    assert json.loads(line) == rec
    assert list(json.loads(line)) == list(rec)
    assert line.startswith(b'{"loc":"https://example.de/b')


def test_encode_record_same_as_json_module() -> None:
    rec = sample_record()
    expected = json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    assert encode_record(rec) == expected


def test_encode_record_nan_is_null() -> None:
    assert encode_record({"priority": float("nan")}) == b'{"priority":null}\n'


def test_encode_record_lone_surrogate_falls_back_to_escapes() -> None:
    line = encode_record({"loc": "https://example.com/\udcff", "n": 1})
    assert line == b'{"loc":"https://example.com/\\udcff","n":1}\n'
    assert json.loads(line)["loc"] == "https://example.com/\udcff"


def test_encode_records_is_each_record_encoded_in_order() -> None:
    # A batch as a worker sends it: records, a NaN and a lone surrogate (the two
    # fallbacks) between them, from a generator (encode_records takes any iterable).
    batch: list[dict[str, object]] = [
        sample_record(0),
        {"priority": float("nan")},
        sample_record(1),
        {"loc": "https://e.com/\udcff"},
    ]
    data = encode_records(r for r in batch)
    assert data == b"".join(encode_record(r) for r in batch)
    assert [json.loads(line) for line in data.splitlines()][2] == batch[2]
    assert encode_records([]) == b""
