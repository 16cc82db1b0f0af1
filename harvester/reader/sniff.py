"""Parse stage, step 1: decide what a document is from its first bytes.

In: the first decoded bytes of a document (the caller buffers until
``sniff()`` stops returning ``None``). Out: a ``Sniffed`` telling the kind,
the offset where the parser should start (past a BOM, leading whitespace, or
junk before the XML declaration), and the encoding to force, if any.

Never looks at Content-Type or file names. Refuses documents whose DOCTYPE
declares entities (defusedxml's ``forbid_entities`` rule) before any parser
sees them, and names what it found when a body is not a sitemap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harvester.errors import ForbiddenConstruct, NotASitemap
from harvester.models import Kind

__all__ = ["MAX_PROLOG", "Sniffed", "sniff"]

# A prolog (declaration, comments, PIs, DOCTYPE) longer than this is hostile or not a sitemap.
MAX_PROLOG = 1 << 20

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
_UTF32_STARTS = (*_UTF32_BOMS, b"\x00\x00\x00")  # what a UTF-32 head may begin with
_WS = " \t\r\n"
_NAME_END = re.compile(r"[\s/>]")
_ROOT_KINDS = {
    "urlset": Kind.URLSET,
    "sitemapindex": Kind.SITEMAPINDEX,
    "rss": Kind.RSS,
    "RDF": Kind.RSS,  # RSS 1.0 is an rdf:RDF document with <item>s
    "feed": Kind.ATOM,  # Atom 1.0 and 0.3
}


@dataclass(frozen=True, slots=True)
class Sniffed:
    """The verdict on a document's first bytes.

    ``start`` is the byte offset the parser must be fed from; ``encoding``
    is set when the parser must be told the encoding (UTF-8 text with a BOM
    we skipped is still UTF-8, so it stays None); ``warnings`` say what was
    skipped.
    """

    kind: Kind
    start: int
    encoding: str | None = None
    root: str | None = None
    warnings: tuple[str, ...] = ()
    # Read as UTF-8: a text sitemap without a UTF-16/32 BOM, XML declared UTF-8 or not
    # declared (and not cp1252 by the fallback). Its bytes that are not UTF-8 are then
    # percent-escaped before the parser sees them (harvester/reader/utf8.py).
    utf8: bool = False


def sniff(head: bytes, *, final: bool = False) -> Sniffed | None:
    """Classify a document from its first bytes.

    Returns None when ``head`` is too short to decide and more may come
    (``final`` False). Raises ``NotASitemap`` (empty body, HTML, unknown
    root) or ``ForbiddenConstruct`` (entity declarations).
    """
    if head.startswith(_UTF32_BOMS):
        return _sniff_utf32(head, final=final, codec="UTF-32")
    if (bare := _utf32_bare(head)) is not None:
        return _sniff_utf32(head, final=final, codec=bare)
    if (
        not final
        and len(head) < 4
        and (any(b.startswith(head) for b in _UTF32_STARTS) or not head[1:].strip(b"\x00"))
    ):
        return None  # (FF FE is UTF-16's BOM unless two NULs follow; "h" may be UTF-32's)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _sniff_utf16(head, final=final)
    if head[:2] in (b"<\x00", b"\x00<"):
        return _sniff_utf16(head, final=final, bom=False)
    offset = 3 if head.startswith(_UTF8_BOM) else 0
    if not final and len(head) < 3 and _UTF8_BOM.startswith(head):
        return None
    # latin-1 maps bytes 1:1 to code points, so string offsets are byte offsets.
    text = head.decode("latin-1")
    pos = _skip_ws(text, offset)
    if pos >= len(text):
        if final:
            raise NotASitemap("empty body" if not text.strip() else "body is only whitespace")
        return None
    if text[pos] != "<":
        return Sniffed(Kind.TEXT, offset, utf8=True)
    result = _scan_prolog(text, pos, final=final)
    if result is None:
        return None
    root, start, warnings = result
    declared = _declared_encoding(text, start)
    encoding = None if declared is not None else _fallback_encoding(head[start:])
    utf8 = declared in ("utf-8", "utf8") or (declared is None and encoding is None)
    return Sniffed(_root_kind(root), start, encoding, root, warnings, utf8)


def _sniff_utf16(head: bytes, *, final: bool, bom: bool = True) -> Sniffed | None:
    """UTF-16 documents are fed to lxml untouched (it reads the BOM); only classify them."""
    codec = "utf-16" if bom else ("utf-16-le" if head[:2] == b"<\x00" else "utf-16-be")
    return _sniff_wide(head, final=final, codec=codec, unit=2, xml_encoding=None)


def _utf32_bare(head: bytes) -> str | None:
    """UTF-32 without a BOM, told by its first character (XML's autodetection rule): an
    ASCII one is its byte and three NULs. Codec names both Python and libxml2 know."""
    if len(head) < 4 or head[:4] == b"\x00\x00\x00\x00":
        return None
    if head[1:4] == b"\x00\x00\x00":
        return "UTF-32LE"
    if head[:3] == b"\x00\x00\x00":
        return "UTF-32BE"
    return None


def _sniff_utf32(head: bytes, *, final: bool, codec: str) -> Sniffed | None:
    """UTF-32 documents: classified here, and the parser told the encoding (libxml2 does
    not detect UTF-32 from a little-endian BOM by itself; the text reader decodes with
    the same codec name, which Python knows too)."""
    return _sniff_wide(head, final=final, codec=codec, unit=4, xml_encoding=codec)


def _sniff_wide(
    head: bytes, *, final: bool, codec: str, unit: int, xml_encoding: str | None
) -> Sniffed | None:
    """Classify a UTF-16 or UTF-32 head (whole ``unit``-byte code units only); a text
    sitemap is decoded with ``codec``, an XML one parsed with ``xml_encoding``."""
    usable = len(head) - (len(head) % unit)
    text = head[:usable].decode(codec, errors="replace").lstrip("\ufeff")
    pos = _skip_ws(text, 0)
    if pos >= len(text):
        if final:
            raise NotASitemap("empty body")
        return None
    if text[pos] != "<":
        return Sniffed(Kind.TEXT, 0, codec)
    result = _scan_prolog(text, pos, final=final)
    if result is None:
        return None
    root, _, warnings = result
    return Sniffed(_root_kind(root), 0, xml_encoding, root, warnings)


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    return pos


def _scan_prolog(text: str, pos: int, *, final: bool) -> tuple[str, int, tuple[str, ...]] | None:
    """Walk declaration, comments, PIs and DOCTYPE up to the root start tag.

    Returns (root qname, offset to feed from, warnings), or None if more bytes
    are needed. Junk before a late ``<?xml`` declaration (a cache plugin's
    comment, whitespace) is skipped so the declaration comes first, as
    libxml2 requires.
    """
    start = pos
    warnings: list[str] = []
    seen_markup = False
    while True:
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            _need_more(final, "document has no root element")
            return None
        if pos > MAX_PROLOG:
            raise NotASitemap(f"no root element in the first {MAX_PROLOG} bytes")
        if text.startswith("<?xml", pos) and text[pos + 5 : pos + 6] in ("", " ", "\t", "\r", "\n"):
            if len(text) < pos + 6:
                _need_more(final, "truncated XML declaration")
                return None
            if seen_markup:
                warnings.append("content before the XML declaration was skipped")
            start = pos  # the declaration must be the first thing libxml2 sees
            pos = _past(text, pos, "?>", final, "unterminated XML declaration")
        elif text.startswith("<?", pos):
            pos = _past(text, pos, "?>", final, "unterminated processing instruction")
        elif text.startswith("<!--", pos):
            pos = _past(text, pos + 4, "-->", final, "unterminated comment")
        elif text.startswith("<!DOCTYPE", pos) or text.startswith("<!doctype", pos):
            pos = _doctype(text, pos, final, warnings)
        elif text.startswith("<", pos) and len(text) > pos + 1 and text[pos + 1] == "!":
            if len(text) < pos + 9:
                _need_more(final, "truncated markup declaration")
                return None
            raise NotASitemap(f"unexpected markup {text[pos : pos + 12]!r} before the root element")
        elif text.startswith("<", pos):
            m = _NAME_END.search(text, pos + 1)
            if m is None:
                _need_more(final, "truncated root element")
                return None
            return text[pos + 1 : m.start()], start, tuple(warnings)
        else:
            raise NotASitemap(f"unexpected text {text[pos : pos + 20]!r} before the root element")
        if pos < 0:
            return None  # (more bytes are needed: _need_more said so)
        seen_markup = True


def _past(text: str, pos: int, close: str, final: bool, unterminated: str) -> int:
    """The offset after the first ``close`` from ``pos``; -1 when more bytes are needed
    (``unterminated``, the verdict at the end of input)."""
    end = text.find(close, pos)
    if end < 0:
        _need_more(final, unterminated)
        return -1
    return end + len(close)


def _doctype(text: str, pos: int, final: bool, warnings: list[str]) -> int:
    """The offset after the DOCTYPE at ``pos`` (ignored, and said in ``warnings``); -1
    when more bytes are needed. One that declares entities, or an HTML page's, is refused."""
    end = _doctype_end(text, pos)
    if end < 0:
        _need_more(final, "unterminated DOCTYPE")
        return -1
    doctype = text[pos:end]
    if "<!ENTITY" in doctype:
        raise ForbiddenConstruct("DOCTYPE declares entities (refused before parsing)")
    if re.match(r"<!doctype\s+html", doctype, re.IGNORECASE):
        raise NotASitemap("found an HTML page (<!DOCTYPE html>), not a sitemap")
    warnings.append("DOCTYPE ignored (never loaded)")
    return end


def _need_more(final: bool, reason: str) -> None:
    """More bytes could decide; at the end of input there are none, so ``reason`` is the verdict."""
    if final:
        raise NotASitemap(reason)


def _doctype_end(text: str, pos: int) -> int:
    """Offset just past the DOCTYPE starting at ``pos`` (internal subset aware), or -1."""
    bracket = text.find("[", pos)
    close = text.find(">", pos)
    if close < 0:
        return -1
    if 0 <= bracket < close:
        end = text.find("]", bracket)
        if end < 0:
            return -1
        close = text.find(">", end)
        if close < 0:
            return -1
    return close + 1


def _root_kind(root: str) -> Kind:
    local = root.rpartition(":")[2]
    kind = _ROOT_KINDS.get(local)
    if kind is not None:
        return kind
    if local.lower() == "html":
        raise NotASitemap(f"found an HTML page (<{root}>), not a sitemap")
    # Element names are case-sensitive: <URLSET> is not a sitemap root.
    raise NotASitemap(f"unknown root element <{root}>")


_ENCODING = re.compile(r"""encoding\s*=\s*["']([^"']*)""")


def _declared_encoding(text: str, start: int) -> str | None:
    """The encoding the XML declaration at ``start`` names (lower case; '' when it says
    ``encoding`` in a way not understood here), or None when it names none."""
    if not text.startswith("<?xml", start):
        return None
    declaration = text[start : text.find("?>", start)]
    if "encoding" not in declaration:
        return None
    m = _ENCODING.search(declaration)
    return m.group(1).strip().lower() if m is not None else ""


def _fallback_encoding(head: bytes) -> str | None:
    """Undeclared documents are UTF-8 by rule; if the first bytes are not, read them as cp1252.

    A lone trailing partial UTF-8 sequence is not evidence, so only errors
    before the last 4 bytes count.
    """
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:
            return "windows-1252"
    return None
