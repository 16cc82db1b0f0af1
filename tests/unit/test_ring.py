"""The results ring (``harvester.ring``): a real memory file mapped twice, a real ack pipe.

Both ends live in this process here, as they do in two in the run; the tests of
``Results`` and ``ResultPipe`` over a ring are in tests/integration/test_workers.py.
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import TYPE_CHECKING

import pytest

from harvester import ring
from harvester.ring import RingReader, RingWriter

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def pair() -> Iterator[tuple[RingWriter, RingReader]]:
    """A 4 KiB ring: the worker's end and the parent's end."""
    fd = ring.create(4096)
    assert fd is not None  # Linux: memory files exist
    ack_r, ack_w = os.pipe()
    reader = RingReader(os.dup(fd), ack_w)
    writer = RingWriter(fd, ack_r)
    yield writer, reader
    writer.close()
    reader.close()


async def test_bytes_put_by_the_worker_are_read_in_place_by_the_parent(
    pair: tuple[RingWriter, RingReader],
) -> None:
    writer, reader = pair
    at = await writer.put([b"abc", bytearray(b"def"), memoryview(b"ghij")], 10)
    view = reader.view(at, 10)
    assert view.readonly  # the parent cannot scribble on the worker's bytes
    assert bytes(view) == b"abcdefghij"


async def test_regions_are_reused_only_once_acknowledged_and_wrap_to_the_front(
    pair: tuple[RingWriter, RingReader],
) -> None:
    """A seeded stream of messages of random sizes, acknowledged in random bursts: every
    region the parent still holds keeps its bytes while later ones are written, and
    every message arrives whole, including those placed at the front after a wrap.
    """
    writer, reader = pair
    rnd = random.Random(7)
    held: list[tuple[memoryview, bytes]] = []  # views handed out, not yet released
    wrapped = 0
    last_at = -1
    for i in range(2000):
        n = rnd.choice([1, 7, 100, 700, 1500, 4096])
        data = bytes([i % 251]) * n
        put = asyncio.create_task(writer.put([data], n))
        await asyncio.sleep(0)
        if not put.done():  # no room: the parent uses what it holds, then acknowledges
            for view, expected in held:
                assert bytes(view) == expected  # untouched while held
            held.clear()
            reader.release()
        at = await asyncio.wait_for(put, 5)
        wrapped += at < last_at
        last_at = at
        held.append((reader.view(at, n), data))
        if rnd.random() < 0.3:
            for view, expected in held:
                assert bytes(view) == expected
            held.clear()
            reader.release()
    assert wrapped > 100  # the stream went round the ring many times


async def test_a_full_ring_holds_the_worker_until_the_parent_acknowledges(
    pair: tuple[RingWriter, RingReader],
) -> None:
    writer, reader = pair
    first = await writer.put([b"x" * 3000], 3000)
    reader.view(first, 3000)
    second = asyncio.create_task(writer.put([b"y" * 2000], 2000))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not second.done()  # 1,096 bytes free: it waits, without spinning
    reader.release()
    at = await asyncio.wait_for(second, 5)
    assert at == 0  # the ring emptied: it starts over at the front
    assert bytes(reader.view(at, 2000)) == b"y" * 2000


async def test_a_worker_waiting_for_room_fails_once_the_parent_is_gone(
    pair: tuple[RingWriter, RingReader],
) -> None:
    writer, reader = pair
    await writer.put([b"x" * 4096], 4096)
    waiting = asyncio.create_task(writer.put([b"y"], 1))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    reader.close()  # the parent's end of the ack pipe closes with it
    with pytest.raises(BrokenPipeError):
        await asyncio.wait_for(waiting, 5)


def test_what_fits_and_what_goes_inline(pair: tuple[RingWriter, RingReader]) -> None:
    writer, reader = pair
    assert writer.size == 4096
    assert writer.fits(1)
    assert writer.fits(4096)
    assert not writer.fits(0)  # nothing to carry: no region, no ack
    assert not writer.fits(4097)  # larger than the whole ring: through the pipe
    with pytest.raises(ValueError, match="outside"):
        reader.view(4000, 200)


def test_without_memory_files_there_is_no_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "memfd_create")
    assert ring.create() is None


def test_a_full_ack_pipe_keeps_the_rest_for_the_next_release() -> None:
    """More acknowledgements than the pipe takes at once: none is lost, so the worker
    frees every region once it reads them.
    """
    fd = ring.create(4096)
    assert fd is not None
    ack_r, ack_w = os.pipe()
    reader = RingReader(fd, ack_w)
    try:
        os.set_blocking(ack_r, False)
        for _ in range(200_000):  # handed out, each a region the worker waits for
            reader.view(0, 1)
        reader.release()
        acks = os.read(ack_r, 1 << 20)
        assert 0 < len(acks) < 200_000  # the pipe took what it holds
        for _ in range(10):
            if len(acks) == 200_000:
                break
            reader.release()
            acks += os.read(ack_r, 1 << 20)
        assert len(acks) == 200_000
        reader.release()  # nothing left to send
        with pytest.raises(BlockingIOError):
            os.read(ack_r, 1)
    finally:
        reader.close()
        os.close(ack_r)
