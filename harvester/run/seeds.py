"""Seeder stage: lines of the domains input → ``Seed`` values, lazily.

In: text lines (CLI arguments, then a domains file or stdin, read line by line;
a 10M-line file is never held in memory). Out: one ``Seed`` per distinct host
(or per distinct sitemap URL), or an ``InputError`` value for a line that is no
host or http(s) URL. Pure and sync apart from ``open_lines``' file reading.

A line may be::

    example.com   Example.COM.   bücher.de   example.com:8080     bare host: https, may fall back
    127.0.0.2:8080   [::1]:8080                                    IP literal
    https://example.com   http://127.0.0.2:8080/                    origin (path "/" or empty)
    https://example.com/robots.txt                                  robots.txt URL
    https://example.com/sitemap.xml.gz   example.com/sitemap.xml   sitemap URL: discovery skipped

Blank lines and ``#`` comments (whole line, or after whitespace) are skipped.

Example::

    reader = SeedReader.from_cli(args, "domains.txt")
    for item in reader:
        if isinstance(item, InputError):
            log(item)
        else:
            queue_host(item)
    reader.invalid, reader.duplicates  # for the run report
"""

from __future__ import annotations

import hashlib
import io
import ipaddress
import re
import sys
from array import array
from itertools import chain
from typing import TYPE_CHECKING, TextIO
from urllib.parse import urlsplit

import idna

from harvester.crawl.scheduler import host_key
from harvester.crawl.seed import Seed
from harvester.errors import InputError
from harvester.urls.validate import alabel_error

if TYPE_CHECKING:
    from collections.abc import Container, Iterable, Iterator, Sequence
    from types import TracebackType

__all__ = [
    "LineSource",
    "SeedReader",
    "invalid_line",
    "iter_seeds",
    "open_lines",
    "parse_seed",
    "shard_of",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_QUOTE_MAX = 200
_MAX_HOST = 253
_MAX_LABEL = 63
# "scheme:rest"; a line like "example.com:8080" matches too, see parse_seed.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", re.DOTALL).fullmatch
# What may follow "host:" in a bare line: a port, then optionally a path/query.
_PORT_REST = re.compile(r"\d*(?:[/?#].*)?", re.DOTALL).fullmatch
_BAD_CHARS = re.compile(r"[\s\x00-\x1f\x7f]").search
# Host names: letters, digits, '-' and '_' (not RFC 952, but real sites use it).
_LABEL = re.compile(r"[a-z0-9_-]+").fullmatch
_TRAILING_COMMENT = re.compile(r"\s#").search
# The common line, a plain host name, skips urlsplit and host_key (several times
# faster); anything else takes the long way.
_PLAIN_HOST = re.compile(r"(?:[a-z0-9_-]{1,63}\.)*(?=[0-9]*[a-z_-])[a-z0-9_-]{1,63}\.?").fullmatch


def parse_seed(text: str, line: int | None = None) -> Seed:
    """Parse one input line (already free of comments) into a ``Seed``.

    Surrounding whitespace and a BOM are stripped. Raises ``InputError`` (with
    ``line``) saying what is wrong and quoting the text.

    >>> parse_seed("Example.COM.").origin
    'https://example.com'
    """
    text = text.strip().strip("\ufeff").strip()
    if not text:
        raise InputError("empty line", line=line)
    if _BAD_CHARS(text):
        raise _invalid("contains whitespace or control characters", text, line)
    if len(text) <= _MAX_HOST + 1 and _PLAIN_HOST(lowered := text.lower()):
        host = lowered.removesuffix(".")
        if len(host) <= _MAX_HOST and ("--" not in host or alabel_error(host) is None):
            # host_key() maps a plain lower-case name to itself (a test pins this); skipping
            # it here saves its URL parse on the common line.
            return Seed(host, "https://" + host, None, None, line, False)
    match = _SCHEME(text)
    if match and match[2].startswith("//"):
        scheme = match[1].lower()
        if scheme not in _DEFAULT_PORTS:
            raise _invalid(f"unsupported scheme {scheme!r} (only http and https)", text, line)
        url, explicit = text, True
    elif match and match[1].lower() in _DEFAULT_PORTS:
        raise _invalid("malformed URL (expected scheme://host)", text, line)
    elif match and "." not in match[1] and not _PORT_REST(match[2]):
        # javascript:, mailto:, data: ... ("example.com:x" has a dot: a bad port, below)
        raise _invalid(f"unsupported scheme {match[1].lower()!r} (only http and https)", text, line)
    else:
        scheme, explicit = "https", False
        url = "https:" + text if text.startswith("//") else "https://" + text
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # bad port, unbalanced IPv6 brackets
        raise _invalid(f"invalid URL ({exc})", text, line) from None
    if "@" in parts.netloc:
        raise _invalid("credentials in URLs are not supported", text, line)
    if port == 0:
        raise _invalid("invalid port 0", text, line)
    reason, host = _ascii_host(parts.hostname or "", bracketed=parts.netloc.startswith("["))
    if reason:
        raise _invalid(reason, text, line)
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    origin = f"{scheme}://{netloc}"
    key = host_key(origin)  # the scheduler's slot key: one definition for the whole pipeline
    path, query = parts.path, f"?{parts.query}" if parts.query else ""
    sitemap = robots = None
    if path == "/robots.txt":
        robots = origin + path + query
    elif path not in ("", "/") or query:
        sitemap = origin + path + query  # the fragment is never sent: dropped
    return Seed(key, origin, sitemap, robots, line, explicit)


def _ascii_host(host: str, *, bracketed: bool) -> tuple[str, str]:
    """Return ``("", ascii_host)`` or ``(reason, "")`` for the hostname of a URL."""
    if bracketed:
        if "%" in host:  # (ipaddress accepts a scope; no URL can carry one to a server)
            return "an IPv6 zone id is no part of a URL's host", ""
        try:
            return "", f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            return "invalid IPv6 address", ""
    host = host.removesuffix(".")  # the FQDN form "example.com." is the same host
    if not host.isascii():
        try:
            # UTS #46 as browsers and yarl (aiohttp's URLs) do; per label, so ASCII
            # labels keep '_', which IDNA 2008 would refuse.
            mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
            labels = [lb if lb.isascii() else idna.alabel(lb).decode() for lb in mapped.split(".")]
        except idna.IDNAError as exc:
            return f"invalid internationalized host name ({exc})", ""
        host = ".".join(labels).removesuffix(".")
    if not host:
        return "empty host", ""
    if len(host) > _MAX_HOST:
        return f"host name longer than {_MAX_HOST} characters", ""
    labels = host.split(".")
    for label in labels:
        if not label:
            return "empty label in host name", ""
        if len(label) > _MAX_LABEL:
            return f"host label longer than {_MAX_LABEL} characters", ""
        if not _LABEL(label):
            return "characters not allowed in a host name", ""
    if (reason := alabel_error(host)) is not None:
        return reason, ""
    if labels[-1].isdigit():  # all-numeric last label: only an IPv4 address may look like this
        try:
            return "", str(ipaddress.IPv4Address(host))
        except ValueError:
            return "numeric host that is not an IPv4 address", ""
    return "", host


def _invalid(reason: str, text: str, line: int | None) -> InputError:
    quoted = text if len(text) <= _QUOTE_MAX else text[:_QUOTE_MAX] + "…"
    return InputError(f"{reason}: {quoted!r}", line=line)


class _DigestSet:
    """A set of 64-bit digests in one flat ``array('Q')``: open addressing, linear probing.

    8 bytes a slot, kept between 1/3 and 2/3 full, so 12-24 bytes per key
    (36 while growing, when the old and new arrays coexist). A Python ``set``
    of the same digests costs about 80 bytes per key (a 32-40 byte int or bytes
    object plus the set's own 16-byte slots at its load factor), and a set of
    the host strings themselves more still.
    """

    __slots__ = ("_mask", "_slots", "_used")

    def __init__(self, capacity: int = 1024) -> None:
        self._slots = array("Q", [0]) * capacity  # capacity: a power of two; 0 = empty slot
        self._mask = capacity - 1
        self._used = 0

    def __len__(self) -> int:
        return self._used

    def add(self, data: bytes) -> bool:
        """Add the digest of ``data``; return False if it was already present."""
        # blake2b is uniform, so the low bits index the table directly. 0 marks
        # an empty slot: the one digest that is 0 shares a key with digest 1.
        key = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") or 1
        if not self._insert(key):
            return False
        if 3 * self._used > 2 * len(self._slots):
            self._grow()
        return True

    def _insert(self, key: int) -> bool:
        slots, mask = self._slots, self._mask
        i = key & mask
        while (current := slots[i]) != 0:
            if current == key:
                return False
            i = (i + 1) & mask
        slots[i] = key
        self._used += 1
        return True

    def _grow(self) -> None:
        old = self._slots
        self._slots = array("Q", [0]) * (2 * len(old))
        self._mask = len(self._slots) - 1
        self._used = 0
        for key in old:
            if key:
                self._insert(key)


class SeedReader:
    """Turn input lines into seeds, lazily; an iterator that also counts what it skipped.

    Yields a ``Seed`` per new host, or an ``InputError`` value for an invalid
    line (it never raises for bad input). Blank lines and comments are
    skipped. Duplicates are skipped silently but counted: a host seen before
    as a domain, origin or robots.txt URL (first one wins), or a sitemap URL
    seen before (sitemap seeds dedupe by URL, not by host, so one host can
    yield a domain seed and several sitemap seeds; the pipeline merges them).

    Counters: ``lines`` (read, including blank and comment lines), ``seeds``
    (yielded), ``invalid``, ``duplicates``.

    Memory: only 64-bit blake2b digests are kept, in ``_DigestSet``: about 12-24
    bytes per distinct host (36 at the peak of a table growth) whatever the
    length of the name; tests/unit/run/test_seeds.py bounds it with tracemalloc at
    100k hosts. The price of digests is that two distinct keys colliding in 64
    bits drop the second as a duplicate: odds about n²/2⁶⁵, 3·10⁻⁶ for 10M hosts.

    The first ``unnumbered`` lines (the CLI arguments) get ``line=None``; the
    rest are numbered from ``first_line``.
    """

    __slots__ = (
        "_items",
        "_seen",
        "_skip",
        "duplicates",
        "exhausted",
        "invalid",
        "lines",
        "seeds",
        "skipped",
    )

    def __init__(
        self,
        lines: Iterable[str],
        *,
        first_line: int = 1,
        unnumbered: int = 0,
        skip: Container[str] | None = None,
    ) -> None:
        """``skip``: hosts not to yield (counted in ``skipped``): a resumed run's finished hosts."""
        self.lines = 0
        self.seeds = 0
        self.invalid = 0
        self.duplicates = 0
        self.skipped = 0
        self.exhausted = False  # every line read: ``seeds`` is then the input's host count
        self._skip = skip
        self._seen = _DigestSet()  # digests of b"h" + host key and b"s" + sitemap URL
        self._items = self._run(lines, first_line, unnumbered)

    @classmethod
    def from_cli(cls, args: Sequence[str], path: str | None) -> SeedReader:
        """Read the CLI's input: ``args`` (unnumbered), then the file at ``path`` ('-' = stdin)."""
        return cls(open_lines(args, path), unnumbered=len(args))

    def __iter__(self) -> SeedReader:
        return self

    def __next__(self) -> Seed | InputError:
        return next(self._items)

    def _run(
        self, lines: Iterable[str], first_line: int, unnumbered: int
    ) -> Iterator[Seed | InputError]:
        for index, raw in enumerate(lines):
            self.lines += 1
            text = raw.strip().strip("\ufeff").strip()
            if not text or text.startswith("#"):
                continue
            if comment := _TRAILING_COMMENT(text):
                text = text[: comment.start()]
            number = None if index < unnumbered else first_line + index - unnumbered
            try:
                seed = parse_seed(text, number)
            except InputError as exc:
                self.invalid += 1
                yield exc
                continue
            key = b"s" + seed.sitemap.encode() if seed.sitemap else b"h" + seed.host.encode()
            if not self._seen.add(key):
                self.duplicates += 1
                continue
            if self._skip is not None and seed.host in self._skip:
                self.skipped += 1
                continue
            self.seeds += 1
            yield seed
        self.exhausted = True


def iter_seeds(lines: Iterable[str], *, first_line: int = 1) -> SeedReader:
    """Return a ``SeedReader`` over ``lines`` (kept as the simple entry point).

    The result is an iterator of ``Seed | InputError``; keep a reference to it
    to read its counters afterwards.
    """
    return SeedReader(lines, first_line=first_line)


class LineSource:
    """The lines of the CLI's input: the arguments first, then a file read lazily.

    An ``Iterator[str]`` (lines keep their line ending) that closes the file
    when exhausted; call ``close()`` (or use ``with``) when stopping early.
    """

    __slots__ = ("_file", "_lines", "_stdin")

    def __init__(self, args: Sequence[str], file: TextIO | None, *, stdin: bool = False) -> None:
        self._file = file
        self._stdin = stdin  # file wraps sys.stdin's buffer: detach it, never close stdin
        self._lines: Iterator[str] = chain(args, file if file is not None else ())

    def __iter__(self) -> LineSource:
        return self

    def __next__(self) -> str:
        try:
            return next(self._lines)
        except StopIteration:
            self.close()
            raise

    def close(self) -> None:
        """Close the file (stdin is left open)."""
        file, self._file = self._file, None
        if file is None:
            return
        if not self._stdin:
            file.close()
        elif isinstance(file, io.TextIOWrapper) and file is not sys.stdin:
            file.detach()

    def __enter__(self) -> LineSource:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_lines(args: Sequence[str], path: str | None) -> LineSource:
    """Return the CLI's input lines: ``args`` first, then the file at ``path`` ('-' = stdin).

    The file is opened now (so a missing file raises ``OSError`` here, before
    any work starts) and read lazily line by line as UTF-8, undecodable bytes
    replaced by U+FFFD (the line is then reported invalid).
    """
    if path is None:
        return LineSource(args, None)
    if path == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:  # stdin replaced by a text stream (tests, embedding)
            return LineSource(args, sys.stdin, stdin=True)
        wrapper = io.TextIOWrapper(buffer, encoding="utf-8", errors="replace")
        return LineSource(args, wrapper, stdin=True)
    return LineSource(args, open(path, encoding="utf-8", errors="replace"))


def shard_of(host: str, shards: int) -> int:
    """Stable shard index of a host (the same in every process and every run)."""
    digest = hashlib.blake2b(host.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


_MAX_INVALID_SHOWN = 100


def invalid_line(error: InputError, count: int) -> None:
    """Tell the user about the ``count``-th bad input line (first 100; the report counts all)."""
    if count <= _MAX_INVALID_SHOWN:
        print(f"harvester: skipped input {error.message}", file=sys.stderr)
    elif count == _MAX_INVALID_SHOWN + 1:
        print(
            "harvester: more invalid input lines; see input_invalid in the report", file=sys.stderr
        )
