"""Property tests for GzipStream: chunk-boundary and step invariance, differential vs gzip."""

from __future__ import annotations

import gzip
import itertools
from typing import TYPE_CHECKING

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harvester.errors import DecompressedTooLarge
from harvester.reader.decompress import GZIP_MAGIC, GzipStream

if TYPE_CHECKING:
    from collections.abc import Sequence

# Compressible and incompressible payloads: repeated words plus raw bytes.
payloads = st.one_of(
    st.binary(max_size=4096),
    st.lists(
        st.sampled_from([b"<url>", b"<loc>", b"https://example.com/", b"\x00", b"\x1f\x8b"]),
        max_size=400,
    ).map(b"".join),
)
steps = st.integers(min_value=1, max_value=64 * 1024)


def split_at(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    """Split ``data`` at the given positions (any order, duplicates give empty chunks)."""
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def run(chunks: Sequence[bytes], stream: GzipStream) -> bytes:
    out = [piece for chunk in chunks for piece in stream.feed(chunk)]
    out.extend(stream.flush())
    return b"".join(out)


@settings(deadline=None, max_examples=200)
@given(
    payload=payloads,
    level=st.integers(min_value=0, max_value=9),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
    step=steps,
)
@example(payload=b"", level=6, cuts=[], step=1)
def test_gzip_any_split_any_step_matches_gzip_decompress(
    payload: bytes, level: int, cuts: list[int], step: int
) -> None:
    data = gzip.compress(payload, compresslevel=level, mtime=0)
    # One layer only: gzip.decompress would not open a payload that starts with 1f 8b.
    stream = GzipStream(step=step, max_layers=1)
    out = run(split_at(data, cuts), stream)
    assert out == gzip.decompress(data)
    assert (stream.layers, stream.bytes_in, stream.bytes_out) == (1, len(data), len(out))


@settings(deadline=None, max_examples=100)
@given(
    payload=payloads.filter(lambda b: not b.startswith(GZIP_MAGIC)),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
    step=steps,
)
@example(payload=b"\x1f", cuts=[], step=1)
def test_nested_gzip_any_split_any_step_gives_the_payload(
    payload: bytes, cuts: list[int], step: int
) -> None:
    data = gzip.compress(gzip.compress(payload, mtime=0), mtime=0)
    stream = GzipStream(step=step)
    assert run(split_at(data, cuts), stream) == payload
    assert (stream.layers, stream.warnings) == (2, [])


@settings(deadline=None, max_examples=100)
@given(
    members=st.lists(payloads, min_size=1, max_size=4),
    nul_padding=st.integers(min_value=0, max_value=20),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
    step=steps,
)
def test_multi_member_with_nul_padding_matches_gzip_decompress(
    members: list[bytes], nul_padding: int, cuts: list[int], step: int
) -> None:
    # gzip.decompress also skips NUL padding between and after members.
    pad = b"\x00" * nul_padding
    data = b"".join(gzip.compress(m, mtime=0) + pad for m in members)
    stream = GzipStream(step=step, max_layers=1)
    assert run(split_at(data, cuts), stream) == gzip.decompress(data)
    assert not [w for w in stream.warnings if w.startswith("trailing garbage")]


@settings(deadline=None, max_examples=200)
@given(
    data=st.binary(max_size=4096).filter(lambda b: not b.startswith(GZIP_MAGIC)),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
    step=steps,
)
@example(data=b"\x1f", cuts=[0, 1], step=1)
@example(data=b"\x1f\x8c", cuts=[1], step=1)
def test_plain_any_split_is_identity(data: bytes, cuts: list[int], step: int) -> None:
    stream = GzipStream(step=step)
    assert run(split_at(data, cuts), stream) == data
    assert (stream.layers, stream.bytes_in, stream.bytes_out) == (0, len(data), len(data))


@settings(deadline=None, max_examples=100)
@given(
    payload=payloads,
    compress=st.booleans(),
    cap=st.integers(min_value=0, max_value=5000),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
    step=steps,
)
def test_cap_yields_exactly_the_prefix_that_fits(
    payload: bytes, compress: bool, cap: int, cuts: list[int], step: int
) -> None:
    if not compress and payload.startswith(GZIP_MAGIC):
        payload = b"<" + payload
    data = gzip.compress(payload, mtime=0) if compress else payload
    expected = gzip.decompress(data) if compress else payload
    stream = GzipStream(cap, step=step, max_layers=1)
    chunks = split_at(data, cuts)
    if len(expected) <= cap:
        assert run(chunks, stream) == expected
        return
    out: list[bytes] = []

    def drain() -> None:
        for chunk in chunks:
            out.extend(stream.feed(chunk))
        out.extend(stream.flush())

    with pytest.raises(DecompressedTooLarge):
        drain()
    assert b"".join(out) == expected[:cap]
