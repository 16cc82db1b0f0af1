"""Seeder stage: parse_seed, SeedReader (dedup, counters, memory) and open_lines."""

from __future__ import annotations

import io
import os
import sys
import threading
import tracemalloc

import pytest

from harvester.crawl.scheduler import host_key
from harvester.crawl.seed import Seed
from harvester.errors import InputError
from harvester.run.seeds import SeedReader, _DigestSet, iter_seeds, open_lines, parse_seed


def seed(
    host: str,
    origin: str,
    *,
    sitemap: str | None = None,
    robots: str | None = None,
    line: int | None = None,
    explicit: bool = False,
) -> Seed:
    return Seed(host, origin, sitemap, robots, line, explicit)


# -- parse_seed: what a line may be -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("example.com", seed("example.com", "https://example.com")),
        ("Example.COM.", seed("example.com", "https://example.com")),
        ("  example.com\n", seed("example.com", "https://example.com")),
        ("\ufeffexample.com", seed("example.com", "https://example.com")),
        ("bücher.de", seed("xn--bcher-kva.de", "https://xn--bcher-kva.de")),
        ("BÜCHER.de", seed("xn--bcher-kva.de", "https://xn--bcher-kva.de")),
        ("faß.de", seed("xn--fa-hia.de", "https://xn--fa-hia.de")),  # UTS 46 non-transitional
        ("bücher。de", seed("xn--bcher-kva.de", "https://xn--bcher-kva.de")),  # ideographic dot
        ("my_site.bücher.de", seed("my_site.xn--bcher-kva.de", "https://my_site.xn--bcher-kva.de")),
        ("xn--bcher-kva.de", seed("xn--bcher-kva.de", "https://xn--bcher-kva.de")),
        ("my_site.example.com", seed("my_site.example.com", "https://my_site.example.com")),
        ("example.com:8080", seed("example.com:8080", "https://example.com:8080")),
        ("example.com:443", seed("example.com", "https://example.com")),
        ("localhost:8080", seed("localhost:8080", "https://localhost:8080")),
        ("127.0.0.2:8080", seed("127.0.0.2:8080", "https://127.0.0.2:8080")),
        ("127.0.0.2", seed("127.0.0.2", "https://127.0.0.2")),
        ("[::1]:8080", seed("[::1]:8080", "https://[::1]:8080")),
        ("[0:0::1]", seed("[::1]", "https://[::1]")),
        ("https://example.com", seed("example.com", "https://example.com", explicit=True)),
        ("HTTPS://Example.com/", seed("example.com", "https://example.com", explicit=True)),
        ("http://example.com:80/", seed("example.com", "http://example.com", explicit=True)),
        (
            "http://example.com:443",
            seed("example.com:443", "http://example.com:443", explicit=True),
        ),
        (
            "http://127.0.0.2:8080/",
            seed("127.0.0.2:8080", "http://127.0.0.2:8080", explicit=True),
        ),
        (
            "https://example.com/robots.txt",
            seed(
                "example.com",
                "https://example.com",
                robots="https://example.com/robots.txt",
                explicit=True,
            ),
        ),
        (
            "https://Example.com:443/sitemap.xml.gz#frag",
            seed(
                "example.com",
                "https://example.com",
                sitemap="https://example.com/sitemap.xml.gz",
                explicit=True,
            ),
        ),
        (
            "http://example.com/?sitemap=1",
            seed(
                "example.com",
                "http://example.com",
                sitemap="http://example.com/?sitemap=1",
                explicit=True,
            ),
        ),
        (
            "https://bücher.de/karte-ä.xml",
            seed(
                "xn--bcher-kva.de",
                "https://xn--bcher-kva.de",
                sitemap="https://xn--bcher-kva.de/karte-ä.xml",
                explicit=True,
            ),
        ),
        (
            "example.com/sitemap.xml",
            seed("example.com", "https://example.com", sitemap="https://example.com/sitemap.xml"),
        ),
        ("example.com/", seed("example.com", "https://example.com")),
        ("//example.com", seed("example.com", "https://example.com")),
        ("a" * 63 + ".com", seed("a" * 63 + ".com", "https://" + "a" * 63 + ".com")),
    ],
)
def test_parse_seed_accepts(text: str, expected: Seed) -> None:
    assert parse_seed(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "example.com",
        "Example.COM.",
        "my_site.example.com",
        "a-b.c_d.example",
        "localhost",
        "bücher.de",
        "example.com:8080",
        "[::1]:8080",
        "http://example.com:443/",
        "https://Example.com:443/s.xml",
    ],
)
def test_host_is_the_scheduler_host_key(text: str) -> None:
    """The fast path for plain names skips host_key(); it must agree with it."""
    parsed = parse_seed(text)
    assert parsed.host == host_key(parsed.origin)
    assert parsed.host == host_key(parsed.sitemap or parsed.robots or parsed.origin)


def test_parse_seed_keeps_the_line_number() -> None:
    assert parse_seed("example.com", 7).line == 7
    assert parse_seed("https://example.com/s.xml", 8).line == 8


def test_host_of_253_characters_is_the_limit() -> None:
    host = ".".join(["a" * 63] * 3 + ["b" * 61])
    assert len(host) == 253
    assert parse_seed(host).host == host
    assert parse_seed(host + ".").host == host  # the FQDN dot does not count
    with pytest.raises(InputError, match="longer than 253"):
        parse_seed(host + "b")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ftp://example.com", "unsupported scheme 'ftp'"),
        ("javascript:alert(1)", "unsupported scheme 'javascript'"),
        ("mailto:a@example.com", "unsupported scheme 'mailto'"),
        ("http:/example.com", "malformed URL"),
        ("exa mple.com", "whitespace"),
        ("example.com\x00", "control characters"),
        ("https://", "empty host"),
        ("https:///sitemap.xml", "empty host"),
        ("example.com:99999", "Port out of range"),
        ("example.com:abc", "Port could not be cast"),
        ("example.com:0", "invalid port 0"),
        ("[::1", "Invalid IPv6"),
        ("[::g]:80", "does not appear to be an IPv4 or IPv6 address"),
        ("[example.com]", "does not appear to be an IPv4 or IPv6 address"),
        ("a..example.com", "empty label"),
        ("a" * 64 + ".com", "label longer than 63"),
        ("exa$mple.com", "characters not allowed"),
        ("exa%41mple.com", "characters not allowed"),
        ("https://exa<mple.com/", "characters not allowed"),
        ("example.com\ufffd", "internationalized"),  # an undecodable byte, replaced
        ("999.1.1.1", "numeric host"),
        ("example.123", "numeric host"),
        ("https://user:pw@example.com/", "credentials"),
    ],
)
def test_parse_seed_rejects(text: str, reason: str) -> None:
    with pytest.raises(InputError, match=reason) as info:
        parse_seed(text, 12)
    assert info.value.line == 12
    assert info.value.message.startswith("line 12: ")
    assert repr(text.strip()) in info.value.message  # quotes the line


def test_parse_seed_error_quotes_at_most_200_characters() -> None:
    text = "ftp://" + "x" * 500
    with pytest.raises(InputError) as info:
        parse_seed(text)
    assert repr(text[:200] + "…") in info.value.message
    assert len(info.value.message) < 300


def test_parse_seed_rejects_an_empty_line() -> None:
    with pytest.raises(InputError, match="empty"):
        parse_seed("   ")


# -- SeedReader / iter_seeds ---------------------------------------------------------------------


def test_iter_seeds_skips_blanks_and_comments_and_numbers_lines() -> None:
    lines = [
        "\ufeff# domains\n",
        "\n",
        "example.com   # the main site\n",
        "   \t\n",
        "  # indented comment\n",
        "https://example.org/sitemap.xml#frag\n",  # '#' without a space is a fragment
        "example.net\t# tab comment\n",
    ]
    reader = iter_seeds(lines, first_line=10)
    out = list(reader)
    assert out == [
        seed("example.com", "https://example.com", line=12),
        seed(
            "example.org",
            "https://example.org",
            sitemap="https://example.org/sitemap.xml",
            line=15,
            explicit=True,
        ),
        seed("example.net", "https://example.net", line=16),
    ]
    assert (reader.lines, reader.seeds, reader.invalid, reader.duplicates) == (7, 3, 0, 0)


def test_invalid_lines_are_yielded_not_raised() -> None:
    reader = SeedReader(["example.com", "ftp://x.org", "a b", "example.org"])
    out = list(reader)
    assert [type(x) for x in out] == [Seed, InputError, InputError, Seed]
    errors = [x for x in out if isinstance(x, InputError)]
    assert [e.line for e in errors] == [2, 3]
    assert reader.invalid == 2


def test_dedup_by_host_key_first_wins() -> None:
    reader = SeedReader(
        [
            "Example.com",
            "https://example.com/",
            "http://example.com",  # same host key, other scheme: still the same host
            "example.com.",
            "https://example.com/robots.txt",  # robots for a host already seen
            "example.com:8080",  # another port is another host
            "https://bücher.de/robots.txt",
            "xn--bcher-kva.de",  # same host as the robots URL before it
        ]
    )
    out = list(reader)
    assert [(s.host, s.line) for s in out if isinstance(s, Seed)] == [
        ("example.com", 1),
        ("example.com:8080", 6),
        ("xn--bcher-kva.de", 7),
    ]
    assert out[2] == seed(
        "xn--bcher-kva.de",
        "https://xn--bcher-kva.de",
        robots="https://xn--bcher-kva.de/robots.txt",
        line=7,
        explicit=True,
    )
    assert reader.duplicates == 5


def test_sitemap_seeds_dedupe_by_url_not_by_host() -> None:
    reader = SeedReader(
        [
            "example.com",
            "https://example.com/a.xml",
            "https://example.com/b.xml",
            "https://EXAMPLE.com:443/a.xml",  # the same URL once host and port are normalized
            "https://example.com/a.xml#x",
            "http://example.com/a.xml",  # another scheme is another URL
        ]
    )
    out = [s for s in reader if isinstance(s, Seed)]
    assert [s.sitemap for s in out] == [
        None,
        "https://example.com/a.xml",
        "https://example.com/b.xml",
        "http://example.com/a.xml",
    ]
    assert reader.duplicates == 2


def test_reader_is_lazy() -> None:
    consumed: list[str] = []

    def lines() -> object:
        for i in range(1_000_000):
            consumed.append(str(i))
            yield f"host{i}.example"

    reader = SeedReader(lines())  # type: ignore[arg-type]
    assert consumed == []
    first = next(reader)
    assert isinstance(first, Seed)
    assert first.host == "host0.example"
    assert len(consumed) == 1


def test_unnumbered_lines_have_no_line_number() -> None:
    reader = SeedReader(["a.example", "b.example", "c.example", "ftp://d"], unnumbered=2)
    out = list(reader)
    assert [x.line for x in out] == [None, None, 1, 2]


def test_digest_set() -> None:
    digests = _DigestSet(capacity=4)
    assert digests.add(b"a")
    assert not digests.add(b"a")
    for i in range(1000):  # forces several growths; everything stays findable
        assert digests.add(str(i).encode())
    assert all(not digests.add(str(i).encode()) for i in range(1000))
    assert len(digests) == 1001


def test_memory_per_host_is_bounded() -> None:
    """The docstring's claim: 12-24 bytes per distinct host kept, 36 at a growth peak."""
    n = 100_000
    lines = (f"host-{i}.some-rather-long-domain-name.example\n" for i in range(n))
    tracemalloc.start()
    try:
        reader = SeedReader(lines)
        count = sum(1 for _ in reader)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == n
    assert current / n < 26, current / n  # the table, plus the reader's small change
    assert peak / n < 40, peak / n


# -- open_lines ----------------------------------------------------------------------------------


def test_open_lines_args_then_file(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "domains.txt")
    with open(path, "wb") as fh:
        fh.write(b"\xef\xbb\xbffile.example\r\nbad\xff.example\n")
    with open_lines(["arg.example"], path) as source:
        lines = list(source)
    assert lines == ["arg.example", "\ufefffile.example\n", "bad\ufffd.example\n"]
    reader = SeedReader.from_cli(["arg.example"], path)
    out = list(reader)
    assert isinstance(out[0], Seed)
    assert out[0].line is None
    assert isinstance(out[1], Seed)
    assert out[1].line == 1
    assert isinstance(out[2], InputError)
    assert out[2].line == 2


def test_open_lines_missing_file_fails_at_once(tmp_path: object) -> None:
    with pytest.raises(FileNotFoundError):
        open_lines(["a.example"], os.path.join(str(tmp_path), "missing.txt"))


def test_open_lines_without_file() -> None:
    assert list(open_lines(["a.example", "b.example"], None)) == ["a.example", "b.example"]


def test_open_lines_closes_the_file_when_exhausted(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "d.txt")
    with open(path, "w") as fh:
        fh.write("a.example\n")
    source = open_lines([], path)
    assert list(source) == ["a.example\n"]
    assert source._file is None


@pytest.mark.timeout(10)
def test_open_lines_reads_stdin_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line is available while the writer still holds the pipe open: no read-to-EOF."""
    read_fd, write_fd = os.pipe()
    stdin = io.TextIOWrapper(open(read_fd, "rb"), encoding="latin-1")  # noqa: SIM115
    monkeypatch.setattr(sys, "stdin", stdin)
    try:
        os.write(write_fd, "bücher.de\nexample.org\n".encode())
        source = open_lines([], "-")
        assert next(source) == "bücher.de\n"  # decoded as UTF-8 whatever stdin's encoding
        assert next(source) == "example.org\n"
        os.close(write_fd)
        write_fd = -1
        assert list(source) == []
        assert not stdin.closed  # stdin is detached from our wrapper, never closed by us
    finally:
        if write_fd != -1:
            os.close(write_fd)
        stdin.buffer.close()


@pytest.mark.timeout(10)
def test_open_lines_reads_a_file_lazily(tmp_path: object) -> None:
    fifo = os.path.join(str(tmp_path), "fifo")
    os.mkfifo(fifo)
    done = threading.Event()

    def writer() -> None:
        with open(fifo, "w") as fh:
            fh.write("a.example\n")
            fh.flush()
            done.wait(5)
            fh.write("b.example\n")

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with open_lines([], fifo) as source:
            assert next(source) == "a.example\n"  # the writer has not closed its end yet
            done.set()
            assert list(source) == ["b.example\n"]
    finally:
        done.set()
        thread.join()


def test_open_lines_text_stdin_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a.example\nb.example\n"))
    assert list(open_lines(["x.example"], "-")) == ["x.example", "a.example\n", "b.example\n"]
    assert not sys.stdin.closed
