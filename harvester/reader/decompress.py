"""Stage 4, decompress: response-body chunks in, plain document bytes out.

In: the raw body bytes of one document, chunk by chunk, exactly as fetched
(after any HTTP ``Content-Encoding`` the client already undid). Out: the
document bytes for the parser, in pieces of at most ``step`` bytes when they
come out of gzip, plus ``layers``, byte counters and ``warnings``.

Gzip is recognised by its magic bytes ``1f 8b`` at the start of the body, never
by URL suffix or Content-Type: a ``.xml.gz`` URL often serves plain XML, and a
gzip body may come with any name. Everything else passes through unchanged.

Bomb guard: zlib is always asked for at most ``step`` bytes per call (and never
for more than one byte past the cap), and the rest of the input is drained from
``unconsumed_tail`` with further bounded calls. Memory stays at about one step
whatever the cap, and an oversized body fails with ``DecompressedTooLarge`` as
soon as the output passes the cap, after everything that fits has been yielded.

The class is pure and synchronous (no I/O, no asyncio); ``pipeline`` decides
whether it runs inline or in a worker thread.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Final

from harvester.errors import DecodeError, DecompressedTooLarge

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["GZIP_MAGIC", "GzipStream"]

GZIP_MAGIC: Final = b"\x1f\x8b"
_GZIP_WBITS: Final = zlib.MAX_WBITS | 16  # gzip header and trailer, no zlib/raw guessing
# Bytes tolerated (silently) between and after gzip members: tape/block padding.
_PADDING: Final = b"\x00\t\n\x0b\x0c\r "

# _Layer modes. Plain ints keep the per-step dispatch cheap.
_SNIFF: Final = 0  # waiting for the first two bytes
_PLAIN: Final = 1  # not gzip: pass through
_MEMBER: Final = 2  # inside a gzip member
_BETWEEN: Final = 3  # a member ended: padding, another member, or garbage next
_IGNORE: Final = 4  # trailing garbage seen: drop everything else

# GzipStream states.
_READY: Final = 0
_BUSY: Final = 1  # a feed() iterator was handed out and is not exhausted yet
_FAILED: Final = 2
_DONE: Final = 3  # flush() completed


class _Layer:
    """One level of decoding: sniff, then pass through or inflate gzip member after member."""

    __slots__ = (
        "_cap",
        "_head",
        "_ignored",
        "_pad",
        "_step",
        "_warn_at",
        "_warnings",
        "_where",
        "_zd",
        "is_gzip",
        "members",
        "mode",
        "out",
    )

    def __init__(self, depth: int, cap: int, step: int, warnings: list[str], decode: bool) -> None:
        self._cap = cap  # on this layer's own output, so nested layers are capped too
        self._step = step  # max bytes asked of zlib per call
        self._warnings = warnings  # shared with the owning GzipStream
        self._where = "" if depth == 1 else " (inner gzip layer)"
        self.mode = _SNIFF if decode else _PLAIN
        self.is_gzip = False  # set once the first member starts
        self.members = 0  # members completed (trailer checked)
        self.out = 0  # bytes this layer has emitted; capped at _cap
        self._head = b""  # at most one held-back byte (b"\x1f") until the magic is decidable
        self._zd: zlib._Decompress | None = None  # decoder of the current member
        self._pad = 0  # padding bytes seen since the last member ended
        self._ignored = 0  # trailing-garbage bytes dropped so far
        self._warn_at = -1  # index of our trailing-garbage warning in _warnings

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Yield this layer's output for ``data``."""
        mode = self.mode
        if mode == _MEMBER:  # the hot path first
            return self._inflate(data)
        if mode == _PLAIN:
            return self._plain(data)
        if mode == _IGNORE:
            self._drop(len(data))
            return iter(())
        return self._decide(data)

    def flush(self) -> Iterator[bytes]:
        """Yield what is left at end of input; raise if a member is unfinished."""
        if self.mode == _MEMBER:
            # Everything decodable was already drained by feed(); this call is a cheap
            # safety net that yields nothing, then the unfinished member is an error.
            yield from self._inflate(b"")
            if self.mode == _MEMBER:
                raise DecodeError(
                    f"truncated gzip stream: input ended inside gzip member {self.members + 1}"
                    f" after {self.out} decoded bytes{self._where}"
                )
        elif self._head:  # a lone b"\x1f" that never became a magic number
            head, self._head = self._head, b""
            if self.mode == _SNIFF:
                self.mode = _PLAIN
                yield from self._plain(head)
            else:
                self._garbage(len(head))

    def _decide(self, data: bytes) -> Iterator[bytes]:
        """Handle bytes at a decision point: start of input, or after a member ended."""
        data = self._open(data)
        if self.mode == _MEMBER:
            return self._inflate(data)
        if self.mode == _PLAIN:
            return self._plain(data)
        return iter(())

    def _open(self, data: bytes) -> bytes:
        """Choose the next mode from the leading bytes; return what that mode must process.

        Not a generator, so ``_inflate`` can start member after member in a loop:
        thousands of tiny members in one chunk must not nest generators.
        """
        if self._head:
            data = self._head + data  # one byte in front: copies once per decision, not per step
            self._head = b""
        if self.mode == _BETWEEN:
            rest = data.lstrip(_PADDING)
            self._pad += len(data) - len(rest)
            data = rest
        if len(data) < 2:
            if data in (b"", b"\x1f"):  # maybe the first half of the magic: wait for more
                self._head = data
                return b""
        elif data.startswith(GZIP_MAGIC):
            self.mode = _MEMBER
            self.is_gzip = True
            self._pad = 0  # padding followed by another member is fine
            self._zd = zlib.decompressobj(wbits=_GZIP_WBITS)
            return data
        if self.mode == _SNIFF:
            self.mode = _PLAIN
            return data
        self._garbage(len(data))
        return b""

    def _plain(self, data: bytes) -> Iterator[bytes]:
        """Pass ``data`` through unchanged, counted against the cap."""
        room = self._cap - self.out
        if len(data) > room:
            if room:
                self.out += room
                yield data[:room]
            raise self._too_large()
        self.out += len(data)
        if data:
            yield data

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        """Decode ``data`` in bounded steps; on a member's end, hand the rest to _decide."""
        zd = self._zd
        assert zd is not None  # mode _MEMBER implies a decoder
        step = self._step
        while True:
            room = self._cap - self.out
            # Never ask for more than one byte past the cap: that byte proves the overflow.
            limit = step if step <= room else room + 1
            try:
                chunk = zd.decompress(data, limit)
            except zlib.error as exc:
                # zlib drops the output of the failing call, so up to one step of data
                # just before the corruption is lost; everything before it was yielded.
                raise DecodeError(
                    f"corrupt gzip data in member {self.members + 1}{self._where}: {exc}"
                ) from exc
            if chunk:
                if len(chunk) > room:
                    if room:
                        self.out += room
                        yield chunk[:room]
                    raise self._too_large()
                self.out += len(chunk)
                yield chunk
            if zd.eof:
                # Loop, not recurse, into the next member: see _open.
                data = self._open(self._end_member(zd))
                if self.mode != _MEMBER:
                    return
                zd = self._zd
                assert zd is not None
                continue
            data = zd.unconsumed_tail
            # A full step with no input left may still leave output inside zlib
            # (a long match in progress), so only a short step proves we are drained.
            if not data and len(chunk) < limit:
                return

    def _end_member(self, zd: zlib._Decompress) -> bytes:
        """Close the finished member; return the input that followed it."""
        self.members += 1
        self._zd = None
        self.mode = _BETWEEN
        return zd.unused_data

    def _garbage(self, n: int) -> None:
        """Switch to ignoring everything: what followed a member is neither padding nor gzip."""
        self.mode = _IGNORE
        self._warn_at = len(self._warnings)
        self._warnings.append("")
        self._drop(self._pad + n)

    def _drop(self, n: int) -> None:
        # One warning per layer, rewritten so its count covers every ignored byte so far.
        self._ignored += n
        self._warnings[self._warn_at] = (
            f"trailing garbage after gzip member: {self._ignored} bytes ignored{self._where}"
        )

    def _too_large(self) -> DecompressedTooLarge:
        what = " (plain input, not gzip)" if not self.is_gzip else self._where
        return DecompressedTooLarge(f"decompressed size exceeds {self._cap} bytes{what}")


class GzipStream:
    """Sync incremental decoder: sniffs gzip by magic bytes, decodes in bounded steps, caps output.

    Feed the body chunk by chunk and exhaust each returned iterator before the
    next call; then call ``flush()`` once and exhaust it too::

        stream = GzipStream(max_output=cfg.reader.max_decompressed_bytes)
        for chunk in body_chunks:
            for data in stream.feed(chunk):
                parser.feed(data)
        for data in stream.flush():
            parser.feed(data)
        stats.gzip_layers = stream.layers

    ``feed`` and ``flush`` are lazy: nothing is decoded until you iterate, and
    each piece is produced only when you ask for it, so memory stays at about
    one ``step`` per gzip layer whatever the document size.

    * Input that does not start with ``1f 8b`` passes through unchanged.
    * Gzip is decoded member after member. NUL/whitespace padding after a member
      is ignored; anything else after a member is dropped with one warning in
      ``warnings`` (not an error).
    * If the decoded output itself starts with ``1f 8b`` it is decoded once more
      (``max_layers=2``); deeper nesting passes through undecoded, with a warning.
    * Output beyond ``max_output`` bytes (checked on every layer) raises
      ``DecompressedTooLarge`` after yielding the part that fits.
    * Corrupt gzip raises ``DecodeError`` during ``feed``/``flush``; gzip cut short
      raises ``DecodeError("truncated gzip stream ...")`` from ``flush``, after
      yielding everything that could be decoded.

    Once an error was raised, every later ``feed``/``flush`` raises the same
    error class again (with the same message). Misuse is a bug, not a bad
    document, and raises ``RuntimeError``: calling ``feed``/``flush`` while the
    previous ``feed`` iterator is not exhausted (or was abandoned), or calling
    ``feed`` after ``flush``. A second ``flush`` yields nothing.
    """

    __slots__ = (
        "_failure",
        "_inner",
        "_layer1",
        "_layer2",
        "_peek",
        "_state",
        "bytes_in",
        "bytes_out",
        "max_layers",
        "max_output",
        "step",
        "warnings",
    )

    def __init__(
        self, max_output: int = 52_428_800, *, step: int = 256 * 1024, max_layers: int = 2
    ) -> None:
        if max_output < 0:
            raise ValueError(f"max_output must be >= 0, got {max_output}")
        if step < 1:
            raise ValueError(f"step must be >= 1, got {step}")
        if not 0 <= max_layers <= 2:
            raise ValueError(f"max_layers must be 0, 1 or 2, got {max_layers}")
        self.max_output = max_output
        self.step = step
        self.max_layers = max_layers
        self.bytes_in = 0
        self.bytes_out = 0
        self.warnings: list[str] = []
        self._layer1 = _Layer(1, max_output, step, self.warnings, decode=max_layers >= 1)
        self._layer2 = _Layer(2, max_output, step, self.warnings, True) if max_layers >= 2 else None
        # Where layer 1's output goes next; dropped once layer 2 proves plain, so plain
        # and single-gzip bodies skip the extra generator on every step.
        self._inner = self._layer2
        # First bytes of the final output, kept only until we can tell whether an
        # undecoded gzip layer remains (for the warning); None once decided.
        self._peek: bytes | None = b""
        self._state = _READY  # _READY/_BUSY/_FAILED/_DONE, guards the call order
        self._failure: DecodeError | None = None  # the error raised, replayed by later calls

    @property
    def layers(self) -> int:
        """Gzip layers decoded: 0 plain passthrough, 1 gzip, 2 gzip inside gzip."""
        inner = self._layer2 is not None and self._layer2.is_gzip
        return int(self._layer1.is_gzip) + int(inner)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Accept the next body chunk; return an iterator over the decoded pieces.

        Exhaust the iterator before calling ``feed`` or ``flush`` again.
        """
        refused = self._check("feed")
        if refused is not None:
            return refused
        self._state = _BUSY
        self.bytes_in += len(data)
        return self._run(data, final=False)

    def flush(self) -> Iterator[bytes]:
        """Signal end of input; return an iterator over whatever is left.

        Raises ``DecodeError`` (while iterating) if a gzip member was cut short.
        """
        if self._state == _DONE:
            return iter(())
        refused = self._check("flush")
        if refused is not None:
            return refused
        self._state = _BUSY
        return self._run(b"", final=True)

    def __repr__(self) -> str:
        state = ("ready", "busy", "failed", "done")[self._state]
        return (
            f"<GzipStream {state} layers={self.layers} in={self.bytes_in}"
            f" out={self.bytes_out}/{self.max_output} warnings={len(self.warnings)}>"
        )

    def _check(self, call: str) -> Iterator[bytes] | None:
        """Return an iterator that raises if ``call`` is not allowed now, else None."""
        if self._state == _READY:
            return None
        failure = self._failure
        if failure is not None:  # _FAILED: replay the error class and message
            return _raising(type(failure)(failure.message, url=failure.url), failure)
        if self._state == _BUSY:
            why = f"{call}() called before the previous feed() iterator was exhausted"
        else:
            why = f"{call}() called after flush()"
        return _raising(RuntimeError(f"GzipStream misuse: {why}"), None)

    def _run(self, data: bytes, *, final: bool) -> Iterator[bytes]:
        """Push ``data`` (or end of input) through the layers and yield the final output."""
        layer1 = self._layer1
        try:
            for piece in layer1.flush() if final else layer1.feed(data):
                inner = self._inner
                if inner is None:
                    self.bytes_out += len(piece)
                    if self._peek is not None:
                        self._look(piece)
                    yield piece
                    continue
                for out in inner.feed(piece):
                    self.bytes_out += len(out)
                    if self._peek is not None:
                        self._look(out)
                    yield out
                if inner.mode == _PLAIN:
                    self._inner = None  # not gzip inside: layer 1's output is final
            if final and self._inner is not None:
                for out in self._inner.flush():
                    self.bytes_out += len(out)
                    if self._peek is not None:
                        self._look(out)
                    yield out
        except DecodeError as exc:
            self._failure = exc
            self._state = _FAILED
            raise
        # Reached only when the caller exhausted the iterator: an abandoned one leaves
        # _BUSY behind, so the next call reports the lost data instead of hiding it.
        self._state = _DONE if final else _READY

    def _look(self, out: bytes) -> None:
        """Record the first two output bytes; warn if they are a gzip layer we did not open."""
        peek = (self._peek or b"") + out[:2]
        if len(peek) < 2:
            self._peek = peek
            return
        self._peek = None
        if peek.startswith(GZIP_MAGIC):
            # Reachable only at the depth limit: shallower layers would have decoded it.
            self.warnings.append(
                f"gzip nested deeper than {self.max_layers} layer(s):"
                " the innermost gzip data was passed through undecoded"
            )


def _raising(exc: Exception, cause: BaseException | None) -> Iterator[bytes]:
    """Return an iterator that raises ``exc`` on first use, like a failing generator."""
    yield from ()  # makes this a generator, so the raise waits for iteration
    raise exc from cause
