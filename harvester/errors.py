"""Every error harvester raises, in one tree.

Each class carries a short machine-readable ``kind`` (the "class" column of the
per-host report) and, when known, the ``url`` it concerns::

    HarvesterError                         kind
    ├── ConfigError                        config              bad TOML, unknown key, bad value
    ├── InputError                         input               a domains line that is no host/URL
    ├── FetchError                         fetch               failed to get a body (has url)
    │   ├── DNSError                       dns
    │   ├── ConnectError                   connect
    │   │   └── TruncatedBody              truncated           the connection ended before the
    │   │                                                      body's declared length
    │   ├── FetchTimeout (+TimeoutError)   timeout
    │   ├── TooSlow                        too_slow            body under fetch.min_speed
    │   ├── BadContentEncoding             bad_encoding        body does not decode as its
    │   │                                                      Content-Encoding says
    │   ├── HTTPStatusError                http_status         (status, retry_after)
    │   │   └── Blocked                    blocked             bot challenge, or a wall: robots.txt
    │   │                                                      and every probe 401/403/451
    │   ├── TooManyRedirects               redirects
    │   ├── MalformedResponse              bad_http            not valid HTTP (a chunk size, a
    │   │                                                      header, the status line)
    │   ├── ForbiddenAddress               forbidden_address   SSRF guard refused the peer
    │   ├── InvalidURL                     invalid_url         a host no client can name (never
    │   │                                                      requested, or a redirect to it)
    │   └── BodyTooLarge                   too_large           compressed body over the cap
    ├── DecodeError                        bad_gzip            zlib error, truncated gzip
    │   └── DecompressedTooLarge           too_large           decompressed over the cap (bomb)
    ├── ParseError                         bad_xml             lxml error (line, column when known)
    │   ├── TruncatedDocument              truncated           the document ended inside an element
    │   ├── ForbiddenConstruct             forbidden_construct DOCTYPE declaring entities
    │   ├── NotASitemap                    not_a_sitemap       HTML page, unknown root, empty body,
    │   │                                                      text with no URL line
    │   ├── LimitExceeded                  limit               a configured per-document cap was hit
    │   └── XmlTooLarge                    too_large           over a libxml2 size or depth limit
    ├── StateError                         state               sqlite, or a state file we cannot use
    │   └── StateLocked                    state_locked        another live run holds its lock
    └── RunFailed                          run_failed          the run itself failed (a worker died,
                                                               the output could not be written)

Errors are translated at the boundary where a third-party exception first
appears (``raise ... from exc``), once. Expected outcomes (a duplicate URL, a
dropped relative loc) are counted in stats, not raised.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "BadContentEncoding",
    "Blocked",
    "BodyTooLarge",
    "ConfigError",
    "ConnectError",
    "DNSError",
    "DecodeError",
    "DecompressedTooLarge",
    "FetchError",
    "FetchTimeout",
    "ForbiddenAddress",
    "ForbiddenConstruct",
    "HTTPStatusError",
    "HarvesterError",
    "InputError",
    "InvalidURL",
    "LimitExceeded",
    "MalformedResponse",
    "NotASitemap",
    "ParseError",
    "RunFailed",
    "StateError",
    "StateLocked",
    "TooManyRedirects",
    "TooSlow",
    "TruncatedBody",
    "TruncatedDocument",
    "XmlTooLarge",
]


class HarvesterError(Exception):
    """Base of every error harvester raises on purpose."""

    kind: ClassVar[str] = "error"

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.url = url

    def __str__(self) -> str:
        if self.url:
            return f"{self.kind}: {self.message} ({self.url})"
        return f"{self.kind}: {self.message}"

    def as_dict(self) -> dict[str, str | None]:
        """Return the JSON shape used in reports: ``{"class", "message", "url"}``."""
        return {"class": self.kind, "message": self.message, "url": self.url}


class ConfigError(HarvesterError):
    """A config file or flag is invalid; ``key`` is the dotted key path when known."""

    kind = "config"

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


class InputError(HarvesterError):
    """A line of the domains input is neither a host nor an http(s) URL."""

    kind = "input"

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


class FetchError(HarvesterError):
    """A body could not be fetched; ``attempts`` counts the requests made, when known."""

    kind = "fetch"
    attempts: int | None = None  # set by whoever made the requests (fetch, host retries)


class DNSError(FetchError):
    """The host name did not resolve."""

    kind = "dns"


class ConnectError(FetchError):
    """The TCP/TLS connection failed or was reset."""

    kind = "connect"


class TruncatedBody(ConnectError):
    """The connection ended (closed or reset) before the body's declared length (its
    Content-Length, or a chunked body's last chunk): a truncated transfer, worth
    fetching again.

    ``status`` is the response's HTTP status (the server answered, 200 say): the
    failure is the transfer, not the answer.
    """

    kind = "truncated"

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None) -> None:
        super().__init__(message, url=url)
        self.status = status


class FetchTimeout(FetchError, TimeoutError):
    """Connect, read-stall or total-time limit exceeded.

    ``first_contact`` says which wait of a host's first request ran out: ``"connect"``
    or ``"first_byte"`` (None: not first contact). Such a host gets one late, patient
    attempt in a run (``harvester.run.late``).
    """

    kind = "timeout"
    first_contact: str | None = None  # set by the fetcher on a first-contact timeout


class TooSlow(FetchError):
    """The body arrived slower than ``fetch.min_speed`` over ``fetch.min_speed_window``.

    Not a ``FetchTimeout``: the server does answer, just too slowly, and fetching
    the body again would only be as slow (so it is not re-fetched).
    """

    kind = "too_slow"


class BadContentEncoding(FetchError):
    """The body does not decode as its Content-Encoding says (gzip on a plain body).

    Not a transfer fault: the same bytes come with the same header every time, so
    it is not retried as one; the host worker asks once more without decoding.
    """

    kind = "bad_encoding"


class HTTPStatusError(FetchError):
    """The server answered with a status that is not 2xx (after redirects)."""

    kind = "http_status"

    def __init__(
        self, message: str, *, url: str | None = None, status: int, retry_after: float | None = None
    ) -> None:
        super().__init__(message, url=url)
        self.status = status
        self.retry_after = retry_after


class Blocked(HTTPStatusError):
    """A bot wall: a challenge page answered instead of the file (403 with ``cf-mitigated``,
    or a small page of a known challenge vendor, ``harvester.crawl.wall``), or a host whose
    robots.txt and every probed location answered 401/403/451.

    Retrying will not help; the site must allow the crawler (or be skipped).
    """

    kind = "blocked"


class TooManyRedirects(FetchError):
    """More redirects than the configured maximum, or a redirect loop."""

    kind = "redirects"


class MalformedResponse(FetchError):
    """The response is not valid HTTP: aiohttp's parser refused its framing (a chunk
    size, a header, the status line). Not an HTTP status (the parser's code 400 is
    none the server sent), and not retried: the server would send the same again.
    """

    kind = "bad_http"


class ForbiddenAddress(FetchError):
    """The SSRF guard refused to connect to the resolved address."""

    kind = "forbidden_address"


class InvalidURL(FetchError):
    """The URL's host can be no DNS name or IP literal (``xn--zz``, a zone id, a space...).

    Raised before any request for a URL from a document (a robots.txt ``Sitemap:`` line,
    a remembered sitemap), and for a redirect that points at such a host.
    """

    kind = "invalid_url"


class BodyTooLarge(FetchError):
    """The (compressed) response body exceeded its size cap."""

    kind = "too_large"


class DecodeError(HarvesterError):
    """The gzip stream is corrupt or truncated."""

    kind = "bad_gzip"


class DecompressedTooLarge(DecodeError):
    """Decompressed output exceeded the cap (the gzip-bomb guard)."""

    kind = "too_large"


class ParseError(HarvesterError):
    """The document is not well-formed XML; ``line``/``column`` locate the fault."""

    kind = "bad_xml"

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(message + where, url=url)
        self.line = line
        self.column = column


class TruncatedDocument(ParseError):
    """The document ended before its root element was closed."""

    kind = "truncated"


class ForbiddenConstruct(ParseError):
    """The document uses a construct we refuse to process (entity declarations)."""

    kind = "forbidden_construct"


class NotASitemap(ParseError):
    """The body is not a sitemap (HTML page, unknown XML root, empty body, text with no URL)."""

    kind = "not_a_sitemap"


class LimitExceeded(ParseError):
    """A configured per-document cap (entries per file) was reached; the rest was skipped."""

    kind = "limit"


class XmlTooLarge(ParseError):
    """A resource limit of libxml2 was met: a text node, attribute value, comment, CDATA
    section or PI over 10,000,000 bytes, a name over 50,000, elements nested deeper than
    256 (harvester never turns on ``XML_PARSE_HUGE``); the message names the limit."""

    kind = "too_large"


class StateError(HarvesterError):
    """The state database failed or is incompatible."""

    kind = "state"


class StateLocked(StateError):
    """Another live run holds the state file's lock (cron runs overlapping)."""

    kind = "state_locked"


class RunFailed(HarvesterError):
    """The run itself failed (a worker crashed, the output could not be written)."""

    kind = "run_failed"
