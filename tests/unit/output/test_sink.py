"""Sink stage: JsonlSink (.part while writing, rename on completion)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from array import array
from typing import TYPE_CHECKING

import pytest

from harvester.crawl.batch import RecordBatch
from harvester.output import sink as sink_module
from harvester.output.sink import JsonlSink
from harvester.urls.records import encode_record, encode_records
from tests.records import sample_record

if TYPE_CHECKING:
    from pathlib import Path


# -- JsonlSink -----------------------------------------------------------------------------------


def test_writes_to_part_then_renames_on_complete(tmp_path: Path) -> None:
    path = str(tmp_path / "out.jsonl")
    sink = JsonlSink(path)
    data = b"".join(encode_record(sample_record(i)) for i in range(3))
    sink.write(data)
    sink.write(encode_record(sample_record(3)))
    assert os.path.exists(path + ".part")
    assert not os.path.exists(path)
    assert (sink.records, sink.bytes) == (4, len(data) + len(encode_record(sample_record(3))))
    sink.close(complete=True)
    assert not os.path.exists(path + ".part")
    with open(path, "rb") as fh:
        lines = fh.read().splitlines()
    assert [json.loads(x)["loc"] for x in lines] == [sample_record(i)["loc"] for i in range(4)]
    assert sink.closed


def test_incomplete_close_leaves_part_with_whole_lines(tmp_path: Path) -> None:
    path = str(tmp_path / "out.jsonl")
    sink = JsonlSink(path)
    sink.write(encode_record(sample_record()))
    sink.close(complete=False)
    assert not os.path.exists(path)
    with open(path + ".part", "rb") as fh:
        content = fh.read()
    assert content == encode_record(sample_record())


def test_incomplete_close_does_not_touch_an_existing_output(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"old":1}\n')
    sink = JsonlSink(str(out))
    sink.write(b'{"new":1}\n')
    sink.close(complete=False)
    assert out.read_bytes() == b'{"old":1}\n'
    sink = JsonlSink(str(out))  # a new run starts a fresh .part
    sink.write(b'{"new":2}\n')
    sink.close(complete=True)
    assert out.read_bytes() == b'{"new":2}\n'


def test_context_manager_exception_leaves_part(tmp_path: Path) -> None:
    path = str(tmp_path / "out.jsonl")

    def fail() -> None:
        with JsonlSink(path) as sink:
            sink.write(b'{"a":1}\n')
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fail()
    assert not os.path.exists(path)
    assert os.path.exists(path + ".part")


def test_context_manager_needs_explicit_completion(tmp_path: Path) -> None:
    path = str(tmp_path / "out.jsonl")
    with JsonlSink(path) as sink:
        sink.write(b'{"a":1}\n')
    assert not os.path.exists(path)  # left without close(complete=True): still partial
    with JsonlSink(path) as sink:
        sink.write(b'{"a":1}\n')
        sink.close(complete=True)
    assert os.path.exists(path)
    assert not os.path.exists(path + ".part")


def test_close_is_idempotent_and_write_after_close_fails(tmp_path: Path) -> None:
    sink = JsonlSink(str(tmp_path / "out.jsonl"))
    sink.close(complete=True)
    sink.close(complete=False)  # no effect: the completed file stays
    assert os.path.exists(tmp_path / "out.jsonl")
    with pytest.raises(ValueError, match="closed"):
        sink.write(b"{}\n")


def test_write_refuses_half_lines(tmp_path: Path) -> None:
    sink = JsonlSink(str(tmp_path / "out.jsonl"))
    with pytest.raises(ValueError, match="whole lines"):
        sink.write(b'{"a":1}\n{"b":')
    sink.write(b"")  # an empty batch is fine
    sink.close(complete=True)
    assert (tmp_path / "out.jsonl").read_bytes() == b""
    assert sink.records == 0


def test_buffered_until_close(tmp_path: Path) -> None:
    """Small batches stay in the 1 MiB buffer: the .part file grows in big steps."""
    path = str(tmp_path / "out.jsonl")
    sink = JsonlSink(path)
    sink.write(b'{"a":1}\n' * 1000)
    assert os.path.getsize(path + ".part") == 0
    sink.write(b'{"a":1}\n' * (1 << 17))  # 1 MiB more
    assert os.path.getsize(path + ".part") > 0
    sink.close(complete=True)
    assert os.path.getsize(path) == 8 * (1000 + (1 << 17))


def test_missing_directory_fails_at_open(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        JsonlSink(str(tmp_path / "nope" / "out.jsonl"))


def test_stdout_mode(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    sink = JsonlSink("-")
    sink.write(encode_record({"loc": "https://example.com/ü"}))
    sink.write(b'{"b":2}\n')
    sink.close(complete=True)
    sink.close(complete=True)
    out = capsysbinary.readouterr().out
    assert out == '{"loc":"https://example.com/ü"}\n{"b":2}\n'.encode()
    assert sink.records == 2
    assert not os.path.exists("-.part")


def test_stdout_mode_is_not_closed_on_error(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    def fail() -> None:
        with JsonlSink("-") as sink:
            sink.write(b'{"a":1}\n')
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fail()
    print("still open")
    captured = capsysbinary.readouterr().out
    assert captured == b'{"a":1}\nstill open\n'


def test_record_batch_size_and_bytes_in_both_forms() -> None:
    # With a state file the filter drops records but keeps every fingerprint (the
    # ledger needs them all): the writer counts records, not fingerprints.
    fps = array("Q", [1, 2, 3])
    filtered = RecordBatch("e.com", [sample_record(1)], fps)
    assert filtered.size() == 1
    assert filtered.encoded() == encode_record(sample_record(1))
    lines = encode_records([sample_record(1), sample_record(2), sample_record(3)])
    encoded = RecordBatch("e.com", [], fps, None, lines)
    assert (encoded.size(), encoded.encoded()) == (3, lines)
    # Encoded after a filter: the batch says how many lines it kept.
    kept = encode_records([sample_record(2)])
    selected = RecordBatch("e.com", [], fps, None, kept, 1)
    assert (selected.size(), selected.encoded()) == (1, kept)


def test_write_takes_the_callers_count(tmp_path: Path) -> None:
    sink = JsonlSink(str(tmp_path / "out.jsonl"))
    sink.write(encode_records([sample_record(1), sample_record(2)]), 2)
    sink.write(encode_record(sample_record(3)))
    assert sink.records == 3
    sink.close(complete=True)


def _resident(path: Path) -> int:
    """Bytes of ``path`` in the page cache (util-linux ``fincore``)."""
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out.split()[0])


needs_drop_behind = pytest.mark.skipif(
    sink_module._sync_range is None or shutil.which("fincore") is None,
    reason="drop-behind needs Linux's sync_file_range; the check needs fincore",
)


@needs_drop_behind
@pytest.mark.parametrize("drop", [True, False])
def test_a_long_output_leaves_the_page_cache_once_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drop: bool
) -> None:
    monkeypatch.setattr(sink_module, "_DROP_STEP", 1 << 20)
    monkeypatch.setattr(sink_module, "_DROP_LAG", 1 << 20)
    if not drop:
        monkeypatch.setattr(sink_module, "_sync_range", None)
    line = b'{"loc":"https://example.com/' + b"x" * 200 + b'"}\n'
    batch = line * 1000  # ~230 KB
    out = tmp_path / "urls.jsonl"
    sink = JsonlSink(str(out))
    for _ in range(60):  # ~14 MB
        sink.write(batch, 1000)
    resident = _resident(tmp_path / "urls.jsonl.part")
    if drop:
        assert sink.dropped >= 10 << 20
        # Left cached: the step being filled, the one being written back, the lag.
        assert sink.bytes - sink.dropped <= 3 << 20
        assert resident <= 4 << 20  # those and the buffer, at most
    else:
        assert sink.dropped == 0
        assert resident >= 12 << 20  # all of it cached
    sink.close(complete=True)
    assert out.read_bytes() == batch * 60


@needs_drop_behind
def test_a_resumed_output_drops_from_where_it_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sink_module, "_DROP_STEP", 1 << 20)
    monkeypatch.setattr(sink_module, "_DROP_LAG", 1 << 20)
    part = tmp_path / "urls.jsonl.part"
    part.write_bytes(b'{"a":1}\n' * 1000 + b'{"uncommitted":')
    sink = JsonlSink(str(tmp_path / "urls.jsonl"), resume_at=8000)
    for _ in range(10):
        sink.write(b'{"b":2}\n' * 100_000, 100_000)
    assert sink.dropped >= 5 << 20
    sink.close(complete=True)
    data = (tmp_path / "urls.jsonl").read_bytes()
    assert data == b'{"a":1}\n' * 1000 + b'{"b":2}\n' * 1_000_000


@pytest.mark.parametrize("resume", [False, True])
def test_large_writes_bypass_the_buffer_and_keep_the_order(
    tmp_path: Path, resume: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of at least ``_DIRECT`` bytes goes to the file directly, after the small
    writes the buffer holds: the file is every write in order, resumed or not."""
    part = tmp_path / "urls.jsonl.part"
    written = []
    if resume:
        part.write_bytes(b'{"old":1}\n' * 10 + b'{"uncommitted":')
        written.append(b'{"old":1}\n' * 10)
    sink = JsonlSink(str(tmp_path / "urls.jsonl"), resume_at=100 if resume else None)
    direct: list[int] = []
    real_write_all = sink_module._write_all

    def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
        direct.append(len(data))
        real_write_all(fd, data)

    monkeypatch.setattr(sink_module, "_write_all", write_all)
    for i in range(6):
        small = b'{"small":%d}\n' % i
        big = (b'{"big":%d}\n' % i) * (sink_module._DIRECT // 10 + 1 + i)  # > _DIRECT bytes
        sink.write(small)
        sink.write(memoryview(big) if i % 2 else bytearray(big))
        written += [small, big]
    sink.close(complete=True)
    assert (tmp_path / "urls.jsonl").read_bytes() == b"".join(written)
    assert len(direct) == 6  # the big ones, and only they, went straight to the file
    assert sink.records == sum(w.count(b"\n") for w in written[1 if resume else 0 :])


def test_prepare_then_publish_is_close_complete_in_two_steps(tmp_path: Path) -> None:
    out = tmp_path / "urls.jsonl"
    sink = JsonlSink(str(out))
    with pytest.raises(ValueError, match="prepare"):
        sink.publish()
    sink.write(b'{"a":1}\n')
    sink.prepare()  # durable and closed under its temporary name
    assert sink.closed
    assert (tmp_path / "urls.jsonl.part").read_bytes() == b'{"a":1}\n'
    assert not out.exists()
    sink.publish()
    assert out.read_bytes() == b'{"a":1}\n'
    assert not (tmp_path / "urls.jsonl.part").exists()
    sink.close(complete=True)  # a no-op now
    assert out.read_bytes() == b'{"a":1}\n'
