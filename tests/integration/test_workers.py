"""Worker processes and their pipes (``harvester.run.workers``): real processes, real pipes.

The tests start their own workers (``WorkerProcess``) or run ``run_job`` with two
workers against loopback sites, and end only the processes they started.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import signal
import sqlite3
import struct
import subprocess
import sys
import time
from array import array
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harvester.config import Config
from harvester.errors import RunFailed
from harvester.run.seeds import parse_seed
from harvester.run.shards import run_job
from harvester.run.transport import (
    DoneMessage,
    ErrorMessage,
    HostMessage,
    Message,
    RecordsMessage,
    ResultPipe,
    Results,
)
from harvester.run.workers import (
    PipeStop,
    SeedPipe,
    WorkerProcess,
)
from harvester.state.chunks import NO_LASTMOD, unpack_urls
from harvester.state.rows import LedgerRows
from tests.integration.conftest import Reply, fast_config
from tests.integration.processes import alive, shards_used, workers_of
from tests.integration.webs import robots, slow_host, urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites


def read_until_eof(worker: WorkerProcess, timeout: float = 30.0) -> list[Message]:
    """Every message the worker sends, until its results pipe ends."""
    assert worker.results is not None
    messages: list[Message] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not wait([worker.results.fileno()], timeout=0.5):
            continue
        try:
            messages.extend(msg for msg, _ in worker.results.messages())
        except EOFError:
            return messages
    raise AssertionError(f"the worker did not end; sent so far: {messages}")


async def worker_pids(expected: int) -> list[int]:
    """This process's children that run a harvester worker (sampled until ``expected``
    show up, see ``workers_of``).
    """
    kids = await workers_of(os.getpid(), expected)
    return [pid for pid, role in kids.items() if role == "harvester-worker"]


def which_outputs(out: Path) -> tuple[bool, bool]:
    """(OUT.part exists, OUT exists)."""
    return Path(f"{out}.part").exists(), out.exists()


def test_a_crash_before_the_loop_is_reported_with_its_traceback() -> None:
    worker = WorkerProcess(0, None, None)  # type: ignore[arg-type]  # no Config: it fails
    worker.start()
    try:
        messages = read_until_eof(worker)
        assert [type(m) for m in messages] == [ErrorMessage]
        (error,) = messages
        assert isinstance(error, ErrorMessage)
        assert error.worker == 0
        assert "AttributeError: 'NoneType' object has no attribute 'run'" in error.traceback
        assert worker.exit_status() == 1
    finally:
        worker.end(terminate=True)
        worker.close()


def test_a_crash_in_the_loop_is_reported_through_the_pipe() -> None:
    """A bug inside the shard (here a seed that is not a ``Seed``) ends the worker with an
    ``ErrorMessage`` holding the traceback: the transport is flushed, not cut mid-frame.
    """
    worker = WorkerProcess(3, Config(), None)
    worker.start()
    try:
        assert worker.send("not a seed")
        assert worker.send(None)
        messages = read_until_eof(worker)
        assert [type(m) for m in messages] == [ErrorMessage]
        (error,) = messages
        assert isinstance(error, ErrorMessage)
        assert error.worker == 3
        assert "'str' object has no attribute 'host'" in error.traceback
        assert worker.exit_status() == 1
        assert worker.send(None) is False  # it is gone: a send fails instead of blocking
    finally:
        worker.end(terminate=True)
        worker.close()


async def test_a_worker_killed_midway_fails_the_run_and_leaves_no_process(
    sites: Sites, tmp_path: Path
) -> None:
    hosts = [await slow_host(sites, f"127.0.0.{110 + i}", delay=0.1) for i in range(6)]
    cfg = fast_config(**{"run.workers": 2, "run.hosts_in_flight": 1})
    out = tmp_path / "urls.jsonl"
    run = asyncio.create_task(
        asyncio.to_thread(run_job, cfg, [h.origin for h in hosts], str(out), progress=False)
    )
    deadline = time.monotonic() + 30
    while sum(1 for h in hosts for hit in h.log if hit.end and "/c" in hit.path) < 3:
        assert time.monotonic() < deadline, "the run never got going"
        assert not run.done()
        await asyncio.sleep(0.05)
    expected = shards_used(hosts, 2)  # random ports: all six may hash to one shard
    pids = await worker_pids(expected)
    assert len(pids) == expected  # the workers are this run's only processes
    os.kill(pids[0], signal.SIGKILL)
    with pytest.raises(RunFailed, match=r"worker \d exited with status -9 before finishing"):
        await asyncio.wait_for(run, timeout=30)
    assert not [pid for pid in pids if alive(pid)]  # the other worker was ended too
    assert which_outputs(out) == (True, False)  # a failed run never looks complete


def frame(obj: object) -> bytes:
    import pickle

    payload = pickle.dumps(obj)
    return struct.pack("!i", len(payload)) + payload


async def results_bytes(*messages: tuple[Message, list[bytes]]) -> bytes:
    """What a worker's ``Results`` writes for ``messages`` (small: they fit in the pipe)."""
    r, w = os.pipe()
    out = Results(w)
    await out.open()
    for msg, records in messages:
        await out.put(msg, records)
    await out.close()
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    return data


async def test_result_pipe_reassembles_frames_split_across_reads() -> None:
    data = await results_bytes(
        (RecordsMessage(2, [("a", b"12345678")], None), [b'{"url":"a"}\n', b'{"url":"b"}\n']),
        (HostMessage({"host": "a"}, None), []),
        (DoneMessage(1), []),
    )
    r, w = os.pipe()
    pipe = ResultPipe(r)
    try:
        assert pipe.messages() == []  # nothing written yet: no wait, no message
        os.write(w, data[:3])  # half a header
        assert pipe.messages() == []
        os.write(w, data[3:20])  # the header and part of the first frame
        assert pipe.messages() == []
        os.write(w, data[20:])
        got = [(msg, bytes(records)) for msg, records in pipe.messages()]
        assert got == [
            (RecordsMessage(2, [("a", b"12345678")], None), b'{"url":"a"}\n{"url":"b"}\n'),
            (HostMessage({"host": "a"}, None), b""),
            (DoneMessage(1), b""),
        ]
        os.close(w)
        with pytest.raises(EOFError):
            pipe.messages()
    finally:
        pipe.close()


async def test_ledger_blobs_cross_the_pipe_out_of_band_and_whole() -> None:
    # Frames split at every byte: the ledger chunks' blobs arrive intact, as views of the
    # parent's buffer, and are in the frame once (not also inside the pickle).
    urls = [f"https://a.example/{i}" for i in range(300)]
    rows = LedgerRows.pack(
        array("q", range(300)), urls, array("q", [NO_LASTMOD] * 300), [("s1", 200), ("s2", 100)]
    )
    records = [b'{"url":"a"}\n']
    data = await results_bytes(
        (RecordsMessage(1, [], [("a.example", rows)]), records), (DoneMessage(1), [])
    )
    assert len(data) < rows.nbytes + 600
    r, w = os.pipe()
    pipe = ResultPipe(r)
    got: list[tuple[Any, ...]] = []
    try:
        for i in range(len(data)):
            os.write(w, data[i : i + 1])
            for msg, raw in pipe.messages():
                if isinstance(msg, RecordsMessage):
                    assert msg.rows is not None
                    ((host, arrived),) = msg.rows
                    assert host == "a.example"
                    assert arrived.sitemaps == rows.sitemaps
                    assert all(type(b) is memoryview for c in arrived.chunks for b in c)
                    blobs = [tuple(bytes(b) for b in c) for c in arrived.chunks]
                    assert blobs == rows.chunks
                    assert unpack_urls(arrived.chunks[1][2]) == urls[200:]
                got.append((type(msg), msg[0], bytes(raw)))
    finally:
        os.close(w)
        pipe.close()
    assert got == [(RecordsMessage, 1, records[0]), (DoneMessage, 1, b"")]


async def test_results_flow_control_holds_the_worker_until_the_parent_reads() -> None:
    r, w = os.pipe()
    reader = ResultPipe(r)
    results = Results(w)
    await results.open()
    # More than the pipe holds and more than the parent's read buffer: both must cope.
    lines = b"x" * (3 << 20) + b"\n"
    await results.put(RecordsMessage(1, [], None), [lines])  # it goes out as the pipe drains
    assert not results.ready.is_set()  # hosts wait before parsing their next chunk
    second = asyncio.create_task(results.put(DoneMessage(0)))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not second.done()  # and the next message waits for the first to go out
    assert not results.ready.is_set()
    received: list[tuple[Any, bytes]] = []
    async with asyncio.timeout(10):
        while len(received) < 2:
            await asyncio.sleep(0.001)
            received += [(msg, bytes(data)) for msg, data in reader.messages()]
    await asyncio.wait_for(second, timeout=5)
    assert results.ready.is_set()
    assert received == [(RecordsMessage(1, [], None), lines), (DoneMessage(0), b"")]
    await results.close()
    with pytest.raises(EOFError):
        reader.messages()
    reader.close()


async def test_seed_pipe_reads_split_frames_then_ends_at_the_parents_none() -> None:
    r, w = os.pipe()
    s_r, s_w = os.pipe()
    stop = PipeStop(s_r)
    stop.watch(asyncio.get_running_loop())
    os.set_blocking(r, False)
    seeds = SeedPipe(r, stop)
    seed = parse_seed("https://a.example")
    data = frame(seed) + frame(None)
    got = asyncio.create_task(seeds.get())
    await asyncio.sleep(0.01)
    assert not got.done()  # waits for bytes, without a thread
    os.write(w, data[:5])
    await asyncio.sleep(0.01)
    assert not got.done()
    os.write(w, data[5:])
    assert await asyncio.wait_for(got, 5) == seed
    assert await asyncio.wait_for(seeds.get(), 5) is None
    for fd in (r, w, s_w):
        os.close(fd)
    asyncio.get_running_loop().remove_reader(s_r)
    os.close(s_r)


async def test_a_stop_ends_a_wait_for_seeds_at_once_and_so_does_a_dead_parent() -> None:
    loop = asyncio.get_running_loop()
    for how in ("byte", "eof"):
        r, w = os.pipe()
        s_r, s_w = os.pipe()
        stop = PipeStop(s_r)
        stop.watch(loop)
        os.set_blocking(r, False)
        seeds = SeedPipe(r, stop)
        got = asyncio.create_task(seeds.get())
        await asyncio.sleep(0.01)
        assert not got.done()
        assert not stop.is_set()
        if how == "byte":
            os.write(s_w, b"s")
        else:
            os.close(s_w)  # the parent died: its end closed
        assert await asyncio.wait_for(got, 5) is None
        assert stop.is_set()
        os.write(w, frame(parse_seed("https://b.example")))
        assert await seeds.get() is None  # stopped: no more seeds are taken
        for fd in (r, w, s_r) if how == "eof" else (r, w, s_r, s_w):
            os.close(fd)


async def receive(reader: ResultPipe, count: int) -> list[tuple[Any, bytes]]:
    """``count`` messages from ``reader`` (their records as bytes)."""
    got: list[tuple[Any, ...]] = []
    async with asyncio.timeout(10):
        while len(got) < count:
            await asyncio.sleep(0.001)
            got += [(msg, bytes(data)) for msg, data in reader.messages()]
    return got


async def test_the_bulk_arrives_whole_and_the_ledger_blobs_as_views() -> None:
    """Lines and ledger blobs follow the pickled message in its frame; the parent gets
    the blobs as views of its read buffer (SQLite copies straight from them)."""
    urls = [f"https://a.example/{i}" for i in range(300)]
    rows = LedgerRows.pack(
        array("q", range(300)), urls, array("q", [NO_LASTMOD] * 300), [("s1", 200), ("s2", 100)]
    )
    lines = [b'{"url":"%d"}\n' % i for i in range(2000)]
    r, w = os.pipe()
    results = Results(w)
    await results.open()
    reader = ResultPipe(r)
    put = asyncio.gather(
        results.put(RecordsMessage(2000, [], [("a.example", rows)]), lines),
        results.put(HostMessage({"host": "a.example"}, None)),
    )
    got: list[tuple[Any, memoryview]] = []
    async with asyncio.timeout(10):
        while len(got) < 2:
            await asyncio.sleep(0.001)
            got += reader.messages()
            if got and isinstance(got[0][0], RecordsMessage):
                break
    (records_msg, data), *rest = got
    assert isinstance(records_msg, RecordsMessage)
    assert records_msg[:2] == (2000, [])
    assert records_msg.rows is not None
    ((host, arrived),) = records_msg.rows
    assert host == "a.example"
    assert arrived.sitemaps == rows.sitemaps
    assert all(type(b) is memoryview for c in arrived.chunks for b in c)
    assert [tuple(bytes(b) for b in c) for c in arrived.chunks] == rows.chunks
    assert unpack_urls(arrived.chunks[1][2]) == urls[200:]
    assert bytes(data) == b"".join(lines)
    rest_bytes = [(m, bytes(d)) for m, d in rest] + (await receive(reader, 1 - len(rest)))
    assert rest_bytes == [(HostMessage({"host": "a.example"}, None), b"")]
    await asyncio.wait_for(put, 5)
    await results.close()
    with pytest.raises(EOFError):
        reader.messages()
    reader.close()


async def test_a_report_waits_behind_records_that_wait_for_pipe_room() -> None:
    """A host's report must not overtake the records put before it (the writer takes a
    host's count as final when its report arrives), also while they wait for room.
    """
    r, w = os.pipe()
    results = Results(w)
    await results.open()
    reader = ResultPipe(r)
    first = [b"1" * 199_999 + b"\n"]  # over the pipe's room: part of it waits
    second = [b"2" * 2999 + b"\n"]
    put_first = asyncio.create_task(results.put(RecordsMessage(1, [], None), first))
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(results.put(RecordsMessage(1, [], None), second))
    report = asyncio.create_task(results.put(HostMessage({"host": "a.example"}, None)))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    assert not report.done()
    assert not results.ready.is_set()  # hosts hold their parsing meanwhile
    got = await receive(reader, 3)
    assert got == [
        (RecordsMessage(1, [], None), first[0]),
        (RecordsMessage(1, [], None), second[0]),
        (HostMessage({"host": "a.example"}, None), b""),
    ]
    await asyncio.wait_for(asyncio.gather(put_first, waiting, report), 5)
    assert results.ready.is_set()
    await results.close()
    reader.close()


async def test_hosts_sending_at_once_while_the_parent_is_behind_each_arrive_whole() -> None:
    """Several hosts flushing while a frame is half-written: each message is built only
    once the one before it is out, so none overwrites another in the shared buffer.
    """
    r, w = os.pipe()
    reader = ResultPipe(r)
    results = Results(w)
    await results.open()
    lines = {i: bytes([65 + i]) * 300_000 + b"\n" for i in range(4)}  # each over the pipe
    puts = [
        asyncio.create_task(results.put(RecordsMessage(i, [], None), [lines[i]])) for i in lines
    ]
    received: list[tuple[Any, bytes]] = []
    async with asyncio.timeout(10):
        while len(received) < len(lines):
            await asyncio.sleep(0.001)
            received += [(msg, bytes(data)) for msg, data in reader.messages()]
    await asyncio.wait_for(asyncio.gather(*puts), timeout=5)
    assert sorted(received) == [(RecordsMessage(i, [], None), lines[i]) for i in lines]
    await results.close()
    reader.close()


async def big_site(sites: Sites, host: str, urls: int) -> Site:
    """robots.txt → a plain urlset and a gzip one, ``urls`` URLs in all."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    locs = [site.url(f"/item/{i}?variant={i % 7}") for i in range(urls)]
    half = urls // 2
    routes.update(
        {
            "/robots.txt": robots(site.url("/a.xml"), site.url("/b.xml.gz")),
            "/a.xml": urlset(*locs[:half], lastmod="2024-03-01T10:00:00Z"),
            "/b.xml.gz": Reply(gzip.compress(urlset(*locs[half:])), headers={}),
        }
    )
    return site


async def test_two_workers_write_every_line_and_ledger_entry_whole(
    sites: Sites, tmp_path: Path
) -> None:
    """Six hosts of 4,000 URLs (~5 MB of lines) through two workers' results pipes: every
    line, per-host report and ledger entry (its blobs crossed too) arrives whole, and
    the output is the one-worker run's."""
    hosts = [await big_site(sites, f"127.0.0.{60 + i}", 4000) for i in range(6)]
    outputs = {}
    for workers_count in (1, 2):
        cfg = fast_config(**{"run.workers": workers_count})
        out = tmp_path / str(workers_count) / "urls.jsonl"
        out.parent.mkdir()
        report = await asyncio.to_thread(
            run_job, cfg, [h.origin for h in hosts], str(out), progress=False
        )
        assert report.urls == 24_000
        assert not report.failures_by_class
        lines = out.read_bytes().splitlines()
        state = sqlite3.connect(f"{out}.state.sqlite")
        fps = array("q")
        for (blob,) in state.execute("SELECT fps FROM url_chunks"):
            fps.frombytes(blob)
        state.close()
        outputs[workers_count] = (sorted(lines), sorted(fps))
    assert len(outputs[2][0]) == 24_000
    assert len(set(outputs[2][1])) == 24_000  # every URL's ledger entry arrived whole
    assert outputs[1] == outputs[2]


def test_a_worker_that_cannot_start_fails_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Not a silent, empty, "complete" run: the reason reaches the caller."""

    def cannot_start(self: WorkerProcess) -> None:
        raise OSError("no interpreter here")

    monkeypatch.setattr(WorkerProcess, "start", cannot_start)
    cfg = fast_config(**{"run.workers": 2})
    out = tmp_path / "urls.jsonl"
    with pytest.raises(RunFailed, match="no interpreter here"):
        run_job(cfg, ["http://127.0.0.1:9/"], str(out), progress=False)
    assert which_outputs(out) == (True, False)  # a failed run never looks complete


def test_the_parent_of_workers_never_imports_the_http_client(tmp_path: Path) -> None:
    """With workers, the parent only writes: importing aiohttp there (it did, through
    ``pipeline``, for a state file's run) delayed every worker's start by ~0.24 s.

    In a fresh interpreter (this one has aiohttp loaded): a run with a state file and
    two workers over one host, whose loopback address the SSRF guard refuses (nothing
    is fetched), then the modules the parent holds.
    """
    out = tmp_path / "urls.jsonl"
    program = f"""
import sys
from harvester.config import load_config
from harvester.run.shards import run_job
cfg = load_config(None, {{"run.workers": 2, "run.uvloop": False}})
report = run_job(cfg, ["http://127.0.0.1:9/"], {str(out)!r}, progress=False)
assert report.hosts_done == 1 and report.state, (report.hosts_done, report.state)
print(" ".join(sorted(m for m in sys.modules if m.startswith(("aiohttp", "harvester.")))))
"""
    proc = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.split()
    assert "harvester.state.store" in loaded  # the run did use its state file
    assert not [m for m in loaded if m.startswith("aiohttp") or m == "harvester.run.pipeline"]
    assert out.exists()
