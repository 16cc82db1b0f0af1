"""Unit tests for harvester.reader.decompress.GzipStream (sync, fast)."""

from __future__ import annotations

import gzip
import random
import struct
import tracemalloc
import zlib
from typing import TYPE_CHECKING

import pytest

from harvester.errors import DecodeError, DecompressedTooLarge, HarvesterError
from harvester.reader.decompress import GzipStream
from tests.paths import DATA

if TYPE_CHECKING:
    from collections.abc import Iterable

FIXTURES = DATA / "gzip"
CONFORMANCE = DATA / "conformance" / "cases"
MIB = 1 << 20

# Mirrors tests/data/gzip/make_fixtures.py (the fixtures' payloads).
HEAD = b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
TAIL = b"</urlset>\n"


def urlset(n: int) -> bytes:
    body = b"".join(b"<url><loc>https://example.com/page/%d</loc></url>\n" % i for i in range(n))
    return HEAD + body + TAIL


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(chunks: Iterable[bytes], stream: GzipStream | None = None) -> tuple[bytes, GzipStream]:
    """Feed every chunk, flush, and return (all output, the stream)."""
    stream = stream if stream is not None else GzipStream()
    out = [piece for chunk in chunks for piece in stream.feed(chunk)]
    out.extend(stream.flush())
    return b"".join(out), stream


def decode_until_error(
    chunks: Iterable[bytes], stream: GzipStream
) -> tuple[bytes, HarvesterError | None]:
    """Like decode(), but return the output yielded before an error, and the error."""
    out: list[bytes] = []
    try:
        for chunk in chunks:
            out.extend(stream.feed(chunk))
        out.extend(stream.flush())
    except HarvesterError as exc:
        return b"".join(out), exc
    return b"".join(out), None


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# --- sniffing and passthrough ---------------------------------------------------------------


def test_plain_input_passes_through_unchanged() -> None:
    doc = urlset(5)
    chunks = split(doc, 7)
    stream = GzipStream()
    pieces = [piece for chunk in chunks for piece in stream.feed(chunk)]
    assert list(stream.flush()) == []
    assert pieces == chunks  # same chunking too: the first 7 bytes decide, nothing is re-buffered
    assert (stream.layers, stream.bytes_in, stream.bytes_out, stream.warnings) == (
        0,
        len(doc),
        len(doc),
        [],
    )


def test_empty_input_yields_nothing() -> None:
    out, stream = decode([b"", b""])
    assert (out, stream.layers, stream.bytes_in, stream.bytes_out) == (b"", 0, 0, 0)


@pytest.mark.parametrize("data", [b"\x1f", b"<", b"\x1f\x8c rest", b"\x8b\x1f"])
def test_short_or_near_magic_plain_input_passes_through(data: bytes) -> None:
    out, stream = decode(split(data, 1))
    assert (out, stream.layers) == (data, 0)


def test_gzip_named_file_that_is_plain_xml_passes_through() -> None:
    raw = (CONFORMANCE / "gzip_fake_plain.xml.gz").read_bytes()
    out, stream = decode(split(raw, 100))
    assert (out, stream.layers, stream.warnings) == (raw, 0, [])


@pytest.mark.parametrize(
    "name",
    ["gzip_magic_only", "gzip_no_suffix.dat", "gzip_named.xml.gz", "sitemaps_org_real.xml.gz"],
)
def test_gzip_is_detected_by_magic_not_by_name(name: str) -> None:
    raw = (CONFORMANCE / name).read_bytes()
    out, stream = decode([raw])
    assert (out, stream.layers) == (gzip.decompress(raw), 1)


# --- gzip -----------------------------------------------------------------------------------


def test_gzip_in_one_chunk() -> None:
    doc = urlset(200)
    data = gz(doc)
    out, stream = decode([data])
    assert (out, stream.layers, stream.bytes_in, stream.bytes_out) == (doc, 1, len(data), len(doc))
    assert repr(stream) == (
        f"<GzipStream done layers=1 in={len(data)} out={len(doc)}/52428800 warnings=0>"
    )


def test_gzip_in_one_byte_feeds() -> None:
    doc = urlset(50)
    out, stream = decode(split(gz(doc), 1))
    assert (out, stream.layers, stream.warnings) == (doc, 1, [])


def test_magic_split_across_first_two_feeds() -> None:
    doc = urlset(3)
    data = gz(doc)
    stream = GzipStream()
    assert list(stream.feed(data[:1])) == []  # b"\x1f": held back, undecided
    assert stream.layers == 0
    out, _ = decode([data[1:]], stream)
    assert (out, stream.layers) == (doc, 1)


def test_pieces_never_exceed_step() -> None:
    doc = urlset(2000)  # ~100 KB, compresses ~20x: each chunk inflates to many steps
    stream = GzipStream(step=4096)
    pieces = [piece for chunk in split(gz(doc), 8192) for piece in stream.feed(chunk)]
    pieces.extend(stream.flush())
    assert b"".join(pieces) == doc
    assert max(map(len, pieces)) == 4096


def test_multi_member_fixture() -> None:
    out, stream = decode([fixture("multi_member.gz")])
    assert (out, stream.layers, stream.warnings) == (urlset(2), 1, [])


def test_multi_member_split_everywhere() -> None:
    data = fixture("multi_member.gz")
    out, stream = decode(split(data, 1))
    assert (out, stream.warnings) == (urlset(2), [])


def test_thousands_of_tiny_members_in_one_chunk() -> None:
    """Members are started in a loop: a recursion here would blow the stack."""
    data = gz(b"") * 20_000 + gz(b"end")
    out, stream = decode([data])
    assert (out, stream.layers) == (b"end", 1)


@pytest.mark.parametrize("padding", [b"\x00" * 512, b"\n", b" \t\r\n\x00"])
def test_padding_after_last_member_is_ignored_silently(padding: bytes) -> None:
    doc = urlset(3)
    out, stream = decode(split(gz(doc) + padding, 5))
    assert (out, stream.warnings) == (doc, [])


def test_nul_padding_between_members_is_ignored() -> None:
    out, stream = decode([gz(b"one ") + b"\x00" * 100 + gz(b"two")])
    assert (out, stream.warnings) == (b"one two", [])


def test_trailing_garbage_warns_once_and_keeps_data() -> None:
    data = fixture("trailing_garbage.gz")
    garbage = b"\r\n<html>not gzip</html>\n"
    stream = GzipStream()
    out = b"".join(piece for chunk in split(data, 10) for piece in stream.feed(chunk))
    out += b"".join(stream.feed(b"more junk"))  # later bytes are counted, not decoded
    out += b"".join(stream.feed(gz(b"a member after garbage is still garbage")))
    out += b"".join(stream.flush())
    assert out == urlset(3)
    ignored = len(garbage) + len(b"more junk") + len(gz(b"a member after garbage is still garbage"))
    assert stream.warnings == [f"trailing garbage after gzip member: {ignored} bytes ignored"]


def test_lone_magic_byte_after_member_is_garbage() -> None:
    out, stream = decode([gz(b"doc"), b"\x1f"])
    assert (out, stream.warnings) == (
        b"doc",
        ["trailing garbage after gzip member: 1 bytes ignored"],
    )


def test_nested_fixture_decodes_two_layers() -> None:
    out, stream = decode(split(fixture("nested.gz"), 3))
    assert (out, stream.layers, stream.warnings) == (urlset(3), 2, [])


def test_third_layer_passes_through_undecoded() -> None:
    inner = gz(urlset(3))
    out, stream = decode([gz(gz(inner))])
    assert (out, stream.layers) == (inner, 2)
    assert stream.warnings == [
        "gzip nested deeper than 2 layer(s): the innermost gzip data was passed through undecoded"
    ]


def test_max_layers_one_stops_after_first_layer() -> None:
    data = fixture("nested.gz")
    out, stream = decode([data], GzipStream(max_layers=1))
    assert (out, stream.layers) == (gzip.decompress(data), 1)
    assert len(stream.warnings) == 1


def test_max_layers_zero_is_capped_passthrough() -> None:
    data = gz(b"x")
    out, stream = decode([data], GzipStream(max_layers=0))
    assert (out, stream.layers) == (data, 0)


def test_trailing_garbage_inside_inner_layer_is_named() -> None:
    out, stream = decode([gz(gz(b"doc") + b"junk")])
    assert (out, stream.layers) == (b"doc", 2)
    assert stream.warnings == [
        "trailing garbage after gzip member: 4 bytes ignored (inner gzip layer)"
    ]


# --- errors ---------------------------------------------------------------------------------


def test_truncated_fixture_raises_from_flush_after_yielding_prefix() -> None:
    data = fixture("truncated.gz")
    stream = GzipStream()
    prefix = b"".join(piece for chunk in split(data, 16) for piece in stream.feed(chunk))
    # The decodable prefix is out before flush: exactly what one-shot zlib produces.
    assert prefix == zlib.decompressobj(wbits=31).decompress(data)
    assert prefix.startswith(HEAD + b"<url><loc>https://example.com/page/0</loc></url>\n")
    assert urlset(40).startswith(prefix)
    assert len(prefix) > 200
    with pytest.raises(DecodeError) as info:
        list(stream.flush())
    assert type(info.value) is DecodeError
    assert info.value.message.startswith("truncated gzip stream")
    assert stream.bytes_out == len(prefix)


def test_truncated_inside_header_and_trailer() -> None:
    data = gz(b"payload")
    for cut in (2, 5, len(data) - 4):
        out, err = decode_until_error([data[:cut]], GzipStream())
        assert isinstance(err, DecodeError), cut
        assert err.message.startswith("truncated gzip stream")
        assert b"payload".startswith(out)


def test_truncated_inner_layer() -> None:
    inner = gz(urlset(20))
    out, err = decode_until_error([gz(inner[:-10])], GzipStream())
    assert isinstance(err, DecodeError)
    assert err.message.endswith("(inner gzip layer)")
    assert urlset(20).startswith(out)


def test_corrupt_gzip_raises_decode_error_from_zlib_error() -> None:
    data = bytearray(gz(urlset(40)))
    data[20:40] = b"\xff" * 20  # inside the deflate stream
    out, err = decode_until_error([bytes(data)], GzipStream())
    assert type(err) is DecodeError
    assert err.message.startswith("corrupt gzip data in member 1: ")
    assert isinstance(err.__cause__, zlib.error)
    assert urlset(40).startswith(out)


def test_bad_crc_is_corrupt() -> None:
    data = bytearray(gz(b"payload"))
    data[-8] ^= 0xFF
    _, err = decode_until_error([bytes(data)], GzipStream())
    assert isinstance(err, DecodeError)
    assert "incorrect data check" in err.message


def test_after_an_error_every_call_raises_the_same_class() -> None:
    stream = GzipStream(max_output=10)
    with pytest.raises(DecompressedTooLarge):
        list(stream.feed(b"x" * 11))
    for call in (lambda: stream.feed(b"more"), stream.flush, stream.flush):
        with pytest.raises(DecompressedTooLarge, match="exceeds 10 bytes") as info:
            list(call())
        assert type(info.value) is DecompressedTooLarge


def test_after_truncation_flush_raises_again() -> None:
    stream = GzipStream()
    list(stream.feed(fixture("truncated.gz")))
    with pytest.raises(DecodeError):
        list(stream.flush())
    with pytest.raises(DecodeError) as info:
        list(stream.flush())
    assert info.value.message.startswith("truncated gzip stream")


def test_misuse_is_a_runtime_error_not_a_document_error() -> None:
    stream = GzipStream()
    stream.feed(b"never iterated")  # lazy: this chunk would be silently lost
    with pytest.raises(RuntimeError, match="previous feed"):
        list(stream.feed(b"next"))

    done = GzipStream()
    list(done.feed(b"plain"))
    list(done.flush())
    assert list(done.flush()) == []  # a second flush is harmless
    with pytest.raises(RuntimeError, match=r"after flush\(\)"):
        list(done.feed(b"late"))


@pytest.mark.parametrize("kwargs", [{"max_output": -1}, {"step": 0}, {"max_layers": 3}])
def test_bad_arguments(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be"):
        GzipStream(**kwargs)


# --- the output cap -------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("step", [1, 1000, 256 * 1024])
def test_cap_exact_passes_one_more_fails(compress: bool, step: int) -> None:
    doc = urlset(100)
    cap = len(doc)
    wire = gz(doc) if compress else doc

    out, err = decode_until_error(split(wire, 50), GzipStream(cap, step=step))
    assert (out, err) == (doc, None)

    over = doc + b"!"
    wire = gz(over) if compress else over
    stream = GzipStream(cap, step=step)
    out, err = decode_until_error(split(wire, 50), stream)
    assert type(err) is DecompressedTooLarge
    assert err.message.startswith(f"decompressed size exceeds {cap} bytes")
    assert out == doc  # everything that fits was yielded first
    assert stream.bytes_out == cap


def test_cap_applies_to_the_outer_layer_of_nested_gzip() -> None:
    # Incompressible payload: gzip makes it bigger, so the outer layer's output (the
    # inner .gz) passes the cap while the final output would still fit.
    payload = random.Random(1).randbytes(5000)
    inner = gz(payload)
    assert len(inner) > len(payload)
    stream = GzipStream(max_output=len(payload))
    out, err = decode_until_error([gz(inner)], stream)
    assert type(err) is DecompressedTooLarge
    assert err.message == f"decompressed size exceeds {len(payload)} bytes"
    assert payload.startswith(out)


def test_cap_applies_to_the_inner_layer() -> None:
    stream = GzipStream(max_output=50_000)
    out, err = decode_until_error([gz(gz(b"\x00" * 50_001))], stream)
    assert type(err) is DecompressedTooLarge
    assert err.message.endswith("(inner gzip layer)")
    assert out == b"\x00" * 50_000


def _crc32_of_zeros(n: int) -> int:
    """CRC-32 of n zero bytes in O(log n): the register update is linear over GF(2)."""

    def one_byte(reg: int) -> int:
        for _ in range(8):
            reg = (reg >> 1) ^ (0xEDB88320 & -(reg & 1))
        return reg

    def apply(mat: list[int], vec: int) -> int:
        res, i = 0, 0
        while vec:
            if vec & 1:
                res ^= mat[i]
            vec >>= 1
            i += 1
        return res

    mat = [one_byte(1 << i) for i in range(32)]  # one zero byte, as a 32x32 bit matrix
    reg = 0xFFFFFFFF
    while n:
        if n & 1:
            reg = apply(mat, reg)
        mat = [apply(mat, col) for col in mat]  # square: twice as many zero bytes
        n >>= 1
    return reg ^ 0xFFFFFFFF


def zero_bomb(mib: int) -> bytes:
    """A valid gzip of ``mib`` MiB of zeros, built in milliseconds.

    Compressing 4 GiB with zlib takes ~11 s here. Instead, deflate 1 MiB of zeros
    once and end it with a full flush: that resets the history and byte-aligns
    the output, so the same bytes encode every further MiB. Then add the final
    empty block and the gzip trailer (CRC of the zeros computed directly).
    """
    comp = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = comp.compress(bytes(MIB)) + comp.flush(zlib.Z_FULL_FLUSH)
    size = mib * MIB
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = struct.pack("<II", _crc32_of_zeros(size), size & 0xFFFFFFFF)
    return header + block * mib + b"\x03\x00" + trailer


def test_zero_bomb_builder_is_valid_gzip() -> None:
    for n in (0, 1, 1000, MIB + 7):
        assert _crc32_of_zeros(n) == zlib.crc32(bytes(n))
    assert gzip.decompress(zero_bomb(3)) == bytes(3 * MIB)


@pytest.mark.parametrize("cap", [MIB, 50 * MIB])
def test_4gib_zero_bomb_fails_fast_in_constant_memory(cap: int) -> None:
    bomb = zero_bomb(4096)  # 4 GiB of zeros in ~4 MB
    assert len(bomb) < 5 * MIB
    stream = GzipStream(cap)
    yielded = [0]

    def drain() -> None:
        for start in range(0, len(bomb), 64 * 1024):  # no list of chunks: it would count in peak
            for piece in stream.feed(bomb[start : start + 64 * 1024]):
                yielded[0] += len(piece)

    tracemalloc.start()
    try:
        with pytest.raises(DecompressedTooLarge, match=f"exceeds {cap} bytes"):
            drain()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Fast, counted rather than timed: it stopped early in the input, at the cap.
    assert stream.bytes_in < len(bomb)
    assert peak < 4 * MIB, f"peak {peak} bytes"  # ~1.3 MB measured, for either cap
    assert yielded[0] == stream.bytes_out == cap
