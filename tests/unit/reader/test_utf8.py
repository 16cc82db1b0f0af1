"""harvester.reader.utf8: bytes that are not UTF-8 become percent-escapes, in any split."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from harvester.reader.utf8 import ERRORS, Utf8Repair


def repaired(pieces: list[bytes]) -> tuple[bytes, int]:
    repair = Utf8Repair()
    out = b"".join(repair.feed(p) for p in pieces) + repair.flush()
    return out, repair.repaired


def test_valid_utf8_and_ascii_pass_unchanged() -> None:
    data = "https://e.com/caf\u00e9/\u4f8b/\U0001f600".encode()
    assert repaired([data]) == (data, 0)
    assert repaired([data[i : i + 1] for i in range(len(data))]) == (data, 0)


def test_bad_bytes_become_their_escapes() -> None:
    assert repaired([b"caf\xe9 x\xff\xfe \xc3( \xed\xa0\x80"])[0] == (
        b"caf%E9 x%FF%FE %C3( %ED%A0%80"
    )
    assert repaired([b"a\xc3"]) == (b"a%C3", 1)  # cut by the end of input


@given(st.binary(max_size=64), st.lists(st.integers(0, 64), max_size=6))
@example(b"\xc3\xa9\xe9", [1, 2])
@example(b"\xf0\x9f\x98\x80\x80", [2, 4])
def test_any_split_gives_the_one_piece_result(data: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    out, count = repaired(pieces)
    assert out == data.decode("utf-8", ERRORS).encode()
    out.decode("utf-8")  # always valid UTF-8
    assert (count > 0) == (out != data)
