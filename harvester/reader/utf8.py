"""Parse stage, between sniff and parser: bytes that are not UTF-8, percent-escaped.

In: the decoded (gunzipped) bytes of a document read as UTF-8 (a text sitemap, or
XML declared UTF-8 or undeclared; ``sniff.Sniffed.utf8``), in any split. Out: the
same bytes, except that a byte which is not part of a valid UTF-8 sequence
becomes its percent-escape (``0xE9`` → ``%E9``), so a loc holding it names the
URL the server meant (``/caf%E9``, which it answers) rather than ``/caf%EF%BF%BD``
(a U+FFFD replacement) or an XML error that ends the document. ``repaired``
counts the pieces that needed it (the reader flags a protocol violation).

Cheap when there is nothing to do: an ASCII piece is returned as it is, a valid
UTF-8 one after one decode (at C speed); only a piece with a bad byte is rebuilt.
A sequence cut by the end of a piece is held until the next one (or ``flush``).
"""

from __future__ import annotations

import codecs

__all__ = ["ERRORS", "Utf8Repair"]

ERRORS = "harvester-percent"  # the codec error handler registered here


def _percent(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: the bad bytes as ``%XX`` escapes."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return "".join(f"%{byte:02X}" for byte in bad), exc.end


codecs.register_error(ERRORS, _percent)


def _cut(data: bytes) -> int:
    """Where a UTF-8 sequence left incomplete by the end of ``data`` starts (or len(data))."""
    n = len(data)
    for back in range(1, min(4, n + 1)):
        byte = data[n - back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: its lead is further back
        if byte >= 0xC0:
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return n - back if need > back else n
        return n  # ASCII
    return n


class Utf8Repair:
    """Incremental filter: ``feed`` pieces, then ``flush``; see the module docstring.

    Usage::

        repair = Utf8Repair()
        parser.feed(repair.feed(chunk))
        parser.feed(repair.flush())
    """

    __slots__ = ("_held", "repaired")

    def __init__(self) -> None:
        self._held = b""  # the start of a sequence the last piece ended in
        self.repaired = 0  # pieces in which a byte was escaped

    def feed(self, data: bytes) -> bytes:
        """The bytes of ``data`` that are complete, bad ones escaped."""
        if self._held:
            data, self._held = self._held + data, b""
        if data.isascii():
            return data
        cut = _cut(data)
        if cut < len(data):
            data, self._held = data[:cut], data[cut:]
        return self._checked(data)

    def flush(self) -> bytes:
        """End of input: what was held (an incomplete sequence, so escaped)."""
        data, self._held = self._held, b""
        return self._checked(data) if data else data

    def _checked(self, data: bytes) -> bytes:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            self.repaired += 1
            return data.decode("utf-8", ERRORS).encode("utf-8")
        return data
