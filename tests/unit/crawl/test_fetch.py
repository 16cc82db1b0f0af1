"""Fetcher unit behaviour against aioresponses (no sockets at all).

Retry waits go through an injected ``sleep`` that records its argument and
advances a fake clock, which is also the host slot's clock: a Retry-After
back-off is over as soon as the fetcher has "slept" it, and no test waits.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import socket
import time
from typing import Any

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey
from aiohttp.http_exceptions import ContentEncodingError, ContentLengthError, TransferEncodingError
from aioresponses import aioresponses
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from harvester.config import FetchConfig, HostPolicy
from harvester.crawl.fetch import Body, Fetcher, not_before, retry_after_seconds
from harvester.crawl.scheduler import HostSlot
from harvester.errors import (
    BadContentEncoding,
    BodyTooLarge,
    ConfigError,
    ConnectError,
    DNSError,
    FetchError,
    FetchTimeout,
    HTTPStatusError,
    InvalidURL,
    MalformedResponse,
    TooManyRedirects,
    TruncatedBody,
)

URL_A = "http://site-a.test/sitemap.xml"


class FakeTime:
    """A clock for the slot plus a ``sleep`` for the fetcher that records and advances it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class CeilingRandom(random.Random):
    """Full jitter picks uniform(0, ceiling); this always picks the ceiling."""

    def uniform(self, a: float, b: float) -> float:
        return b


class RecordingSlot(HostSlot):
    def __init__(self, clock: FakeTime) -> None:
        super().__init__(
            "site-a.test", HostPolicy(concurrency=4, rate=1e6, burst=1000), clock=clock.clock
        )
        self.back_offs: list[float] = []

    def back_off(self, seconds: float) -> None:
        self.back_offs.append(seconds)
        super().back_off(seconds)


class _SentRequest:
    output_size = 0


class _CompatResponse(aiohttp.ClientResponse):
    """aioresponses 0.7.9 builds responses without aiohttp 3.14's ``stream_writer``.

    Known upstream: pnuckowski/aioresponses#289. ``setdefault`` keeps this a
    no-op once aioresponses passes it itself.
    """

    def __init__(self, method: str, url: URL, **kwargs: Any) -> None:
        kwargs.setdefault("stream_writer", _SentRequest())
        super().__init__(method, url, **kwargs)


@pytest.fixture(autouse=True)
def _aioresponses_compat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("aioresponses.core.ClientResponse", _CompatResponse)


@pytest.fixture
def fake() -> FakeTime:
    return FakeTime()


@pytest.fixture
def slot(fake: FakeTime) -> RecordingSlot:
    return RecordingSlot(fake)


def make_fetcher(fake: FakeTime, **cfg: Any) -> Fetcher:
    return Fetcher(FetchConfig(**cfg), sleep=fake.sleep, rng=CeilingRandom())


async def fetch_all(
    fetcher: Fetcher, slot: HostSlot, url: str = URL_A, **kw: Any
) -> tuple[Body, bytes]:
    async with fetcher.stream(url, slot, **kw) as body:
        data = b"".join([chunk async for chunk in body.chunks()])
    return body, data


def calls(m: aioresponses, url: str = URL_A) -> list[Any]:
    return list(m.requests.get(("GET", URL(url)), []))


def connection_key() -> ConnectionKey:
    return ConnectionKey("site-a.test", 80, False, True, None, None, None)


def request_info() -> aiohttp.RequestInfo:
    return aiohttp.RequestInfo(URL(URL_A), "GET", CIMultiDictProxy(CIMultiDict()), URL(URL_A))


# -- success -------------------------------------------------------------------------


async def test_success_streams_the_body(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"<urlset/>", headers={"ETag": '"v1"'})
        async with make_fetcher(fake) as fetcher:
            body, data = await fetch_all(fetcher, slot)
    assert data == b"<urlset/>"
    assert (body.url, body.status, body.attempts, body.redirects) == (URL_A, 200, 1, ())
    assert body.headers["etag"] == '"v1"'
    assert fake.sleeps == []
    assert (slot.active, slot.waiting) == (0, 0)


async def test_slot_is_held_while_the_body_streams(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"x")
        async with make_fetcher(fake) as fetcher, fetcher.stream(URL_A, slot):
            assert slot.active == 1
    assert slot.active == 0


async def test_user_agent_and_extra_headers_are_sent(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"")
        async with make_fetcher(fake, user_agent="testbot/9") as fetcher:
            await fetch_all(fetcher, slot, headers={"If-None-Match": '"v1"'})
    sent = calls(m)[0].kwargs["headers"]
    assert sent["User-Agent"] == "testbot/9"
    assert sent["If-None-Match"] == '"v1"'


async def test_proxy_is_passed_per_request(fake: FakeTime, slot: RecordingSlot) -> None:
    proxy = "http://127.0.0.1:3128"
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"")
        async with make_fetcher(fake, proxy=proxy) as fetcher:
            await fetch_all(fetcher, slot)
    assert calls(m)[0].kwargs["proxy"] == proxy


async def test_no_proxy_by_default(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"")
        async with make_fetcher(fake) as fetcher:
            await fetch_all(fetcher, slot)
    assert calls(m)[0].kwargs["proxy"] is None


async def test_304_is_passed_through(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=304, headers={"ETag": '"v1"'})
        async with make_fetcher(fake) as fetcher:
            body, data = await fetch_all(fetcher, slot, headers={"If-None-Match": '"v1"'})
    assert (body.status, data, body.attempts) == (304, b"", 1)


# -- statuses -------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
async def test_client_errors_are_not_retried(
    fake: FakeTime, slot: RecordingSlot, status: int
) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=status, repeat=True)
        async with make_fetcher(fake) as fetcher:
            with pytest.raises(HTTPStatusError) as info:
                await fetch_all(fetcher, slot)
    assert info.value.status == status
    assert info.value.url == URL_A
    assert info.value.kind == "http_status"
    assert len(calls(m)) == 1
    assert fake.sleeps == []


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_retryable_statuses_use_every_retry(
    fake: FakeTime, slot: RecordingSlot, status: int
) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=status, repeat=True)
        async with make_fetcher(fake, retries=3) as fetcher:
            with pytest.raises(HTTPStatusError) as info:
                await fetch_all(fetcher, slot)
    assert info.value.status == status
    assert len(calls(m)) == 4  # the first attempt plus three retries
    assert fake.sleeps == [0.5, 1.0, 2.0]  # backoff_base doubling (jitter at its ceiling)


async def test_backoff_is_capped(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=500, repeat=True)
        async with make_fetcher(fake, retries=5, backoff_base=1.0, backoff_max=3.0) as fetcher:
            with pytest.raises(HTTPStatusError):
                await fetch_all(fetcher, slot)
    assert fake.sleeps == [1.0, 2.0, 3.0, 3.0, 3.0]


async def test_backoff_jitter_is_drawn_from_the_rng(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=500, repeat=True)
        cfg = FetchConfig(retries=3)
        async with Fetcher(cfg, sleep=fake.sleep, rng=random.Random(7)) as fetcher:
            with pytest.raises(HTTPStatusError):
                await fetch_all(fetcher, slot)
    expected = random.Random(7)
    assert fake.sleeps == [expected.uniform(0, c) for c in (0.5, 1.0, 2.0)]


async def test_server_error_then_success(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=503)
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            body, data = await fetch_all(fetcher, slot)
    assert (body.status, body.attempts, data) == (200, 2, b"ok")
    assert fake.sleeps == [0.5]


async def test_retries_zero_means_one_attempt(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=500, repeat=True)
        async with make_fetcher(fake, retries=0) as fetcher:
            with pytest.raises(HTTPStatusError):
                await fetch_all(fetcher, slot)
    assert len(calls(m)) == 1


# -- Retry-After ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_seconds_is_honoured(
    fake: FakeTime, slot: RecordingSlot, status: int
) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=status, headers={"Retry-After": "7"})
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            body, _ = await fetch_all(fetcher, slot)
    assert body.attempts == 2
    assert fake.sleeps == [7.0]
    assert slot.back_offs == [7.0]  # the whole host waits, not only this file


async def test_retry_after_http_date_is_honoured(fake: FakeTime, slot: RecordingSlot) -> None:
    when = email.utils.formatdate(time.time() + 60, usegmt=True)
    with aioresponses() as m:
        m.get(URL_A, status=429, headers={"Retry-After": when})
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            await fetch_all(fetcher, slot)
    assert 58.0 <= fake.sleeps[0] <= 60.0
    assert slot.back_offs == fake.sleeps


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_beyond_the_cap_gives_up_at_once(
    fake: FakeTime, slot: RecordingSlot, status: int
) -> None:
    # "Come back tomorrow": not asked again after retry_after_max in this run.
    with aioresponses() as m:
        m.get(URL_A, status=status, headers={"Retry-After": "86400"})
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake, retry_after_max=10.0) as fetcher:
            with pytest.raises(HTTPStatusError) as info:
                await fetch_all(fetcher, slot)
    assert (info.value.status, info.value.retry_after, info.value.attempts) == (status, 86400, 1)
    assert len(calls(m)) == 1
    assert fake.sleeps == []
    assert slot.back_offs == []  # the host worker defers the host (not_before)
    assert not_before(info.value, FetchConfig(retry_after_max=10.0)) == 86400
    assert not_before(info.value, FetchConfig(retry_after_max=86400.0)) is None


def test_not_before_is_only_a_retry_after_beyond_the_cap() -> None:
    cfg = FetchConfig(retry_after_max=120.0)
    assert not_before(HTTPStatusError("x", status=503, retry_after=121.0), cfg) == 121.0
    assert not_before(HTTPStatusError("x", status=503, retry_after=120.0), cfg) is None
    assert not_before(HTTPStatusError("x", status=503), cfg) is None
    assert not_before(ConnectError("reset"), cfg) is None


async def test_retry_after_zero_retries_at_once(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=429, headers={"Retry-After": "0"})
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            body, _ = await fetch_all(fetcher, slot)
    assert (body.attempts, fake.sleeps) == (2, [0.0])


@pytest.mark.parametrize(("status", "header"), [(500, "7"), (429, "soon"), (503, "-3"), (429, "")])
async def test_retry_after_ignored_falls_back_to_backoff(
    fake: FakeTime, slot: RecordingSlot, status: int, header: str
) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=status, headers={"Retry-After": header})
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            await fetch_all(fetcher, slot)
    assert fake.sleeps == [0.5]
    assert slot.back_offs == []


async def test_retry_after_past_the_deadline_gives_up_at_once(
    fake: FakeTime, slot: RecordingSlot
) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=429, headers={"Retry-After": "60"}, repeat=True)
        async with make_fetcher(fake, total_timeout=30.0) as fetcher:
            with pytest.raises(HTTPStatusError) as info:
                await fetch_all(fetcher, slot)
    assert (info.value.status, info.value.retry_after) == (429, 60.0)
    assert len(calls(m)) == 1
    assert fake.sleeps == []
    assert slot.back_offs == [60.0]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 5 ", 5.0),
        ("1.5", 1.5),
        ("0", 0.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 10.0),  # now is 07:27:50
        ("Wednesday, 21-Oct-15 07:28:00 GMT", 10.0),  # RFC 850, still allowed
        ("Wed Oct 21 07:28:00 2015", 10.0),  # asctime, zone-less: read as GMT
        ("Wed, 21 Oct 2015 07:00:00 GMT", 0.0),  # in the past
        (None, None),
        ("", None),
        ("-1", None),
        ("soon", None),
        ("inf", None),
        ("nan", None),
        ("1e3", None),
    ],
)
def test_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert retry_after_seconds(value, now=1445412470.0) == expected


# -- exception mapping ----------------------------------------------------------------


def _undecodable() -> aiohttp.ClientPayloadError:
    """What aiohttp raises on a body its Content-Encoding decoder refuses."""
    exc = aiohttp.ClientPayloadError("400, message:\n  Can not decode content-encoding: gzip")
    exc.__cause__ = ContentEncodingError("Can not decode content-encoding: gzip")
    return exc


def _cut_short(cause: Exception) -> aiohttp.ClientPayloadError:
    """What aiohttp raises when the connection ends before the body's declared length."""
    exc = aiohttp.ClientPayloadError(f"Response payload is not completed: {cause!r}")
    exc.__cause__ = cause
    return exc


def _refused_by_the_parser() -> aiohttp.ClientResponseError:
    """What aiohttp raises when its parser refuses a response before handing it over."""
    cause = TransferEncodingError("Invalid character in chunk size")
    exc = aiohttp.ClientResponseError(request_info(), (), status=cause.code, message=cause.message)
    exc.__cause__ = cause
    return exc


def _mapping_cases() -> list[Any]:
    key = connection_key()
    info = request_info()
    return [
        pytest.param(
            aiohttp.ClientConnectorDNSError(key, OSError("no such host")), DNSError, id="dns"
        ),
        pytest.param(
            aiohttp.ClientConnectorError(key, socket.gaierror(socket.EAI_NONAME, "unknown")),
            DNSError,
            id="gaierror",
        ),
        pytest.param(
            aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused")),
            ConnectError,
            id="refused",
        ),
        pytest.param(aiohttp.ServerDisconnectedError(), ConnectError, id="disconnected"),
        pytest.param(aiohttp.ClientOSError(104, "reset by peer"), ConnectError, id="reset"),
        pytest.param(aiohttp.ClientPayloadError("truncated"), ConnectError, id="payload"),
        pytest.param(_undecodable(), BadContentEncoding, id="content-encoding"),
        pytest.param(
            _cut_short(ContentLengthError("Not enough data")), TruncatedBody, id="content-length"
        ),
        pytest.param(
            _cut_short(TransferEncodingError("Not enough data")), TruncatedBody, id="last-chunk"
        ),
        pytest.param(_refused_by_the_parser(), MalformedResponse, id="not-http"),
        pytest.param(TimeoutError(), FetchTimeout, id="asyncio-timeout"),
        pytest.param(aiohttp.ServerTimeoutError("read timeout"), FetchTimeout, id="server-timeout"),
        pytest.param(
            aiohttp.ConnectionTimeoutError("connect timeout"), FetchTimeout, id="connect-timeout"
        ),
        pytest.param(aiohttp.TooManyRedirects(info, ()), TooManyRedirects, id="redirects"),
        pytest.param(aiohttp.InvalidURL("http://[bad"), InvalidURL, id="invalid-url"),
    ]


@pytest.mark.parametrize(("exc", "expected"), _mapping_cases())
async def test_aiohttp_errors_are_translated(
    fake: FakeTime, slot: RecordingSlot, exc: Exception, expected: type[FetchError]
) -> None:
    with aioresponses() as m:
        m.get(URL_A, exception=exc)
        async with make_fetcher(fake, retries=0) as fetcher:
            with pytest.raises(FetchError) as info:
                await fetch_all(fetcher, slot)
    assert type(info.value) is expected
    assert info.value.url == URL_A
    assert info.value.__cause__ is exc
    assert (slot.active, slot.waiting) == (0, 0)


async def test_response_error_maps_to_http_status(fake: FakeTime, slot: RecordingSlot) -> None:
    exc = aiohttp.ClientResponseError(request_info(), (), status=418, message="teapot")
    with aioresponses() as m:
        m.get(URL_A, exception=exc)
        async with make_fetcher(fake, retries=0) as fetcher:
            with pytest.raises(HTTPStatusError) as info:
                await fetch_all(fetcher, slot)
    assert info.value.status == 418


@pytest.mark.parametrize(
    ("exc", "retried"),
    [
        pytest.param(aiohttp.ServerDisconnectedError(), True, id="connect"),
        pytest.param(TimeoutError(), True, id="timeout"),
        pytest.param(
            aiohttp.ClientConnectorDNSError(connection_key(), OSError("nx")), False, id="dns"
        ),
        pytest.param(aiohttp.TooManyRedirects(request_info(), ()), False, id="redirects"),
        pytest.param(aiohttp.InvalidURL("http://[bad"), False, id="invalid-url"),
        pytest.param(_undecodable(), False, id="content-encoding"),
    ],
)
async def test_which_errors_are_retried(
    fake: FakeTime, slot: RecordingSlot, exc: Exception, retried: bool
) -> None:
    slot.mark_answered()  # a host that answered before: first contact has its own rules
    with aioresponses() as m:
        m.get(URL_A, exception=exc)
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            if retried:
                body, _ = await fetch_all(fetcher, slot)
                assert body.attempts == 2
            else:
                with pytest.raises(FetchError):
                    await fetch_all(fetcher, slot)
                assert len(calls(m)) == 1


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        pytest.param(
            aiohttp.ConnectionTimeoutError("connect"), r"connect timeout \(10s\)", id="connect"
        ),
        pytest.param(aiohttp.SocketTimeoutError("read"), r"no response within 4s", id="first-byte"),
    ],
)
async def test_first_contact_timeout_is_final(
    fake: FakeTime, slot: RecordingSlot, exc: Exception, message: str
) -> None:
    with aioresponses() as m:
        m.get(URL_A, exception=exc)
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake, first_byte_timeout=4.0, retries=3) as fetcher:
            with pytest.raises(FetchTimeout, match=message) as info:
                await fetch_all(fetcher, slot)
    assert "first contact, not retried" in info.value.message
    assert info.value.attempts == 1
    assert info.value.url == URL_A
    assert len(calls(m)) == 1
    assert fake.sleeps == []
    assert not slot.answered


async def test_first_contact_connection_refused_is_still_retried(
    fake: FakeTime, slot: RecordingSlot
) -> None:
    refused = aiohttp.ClientConnectorError(connection_key(), ConnectionRefusedError(111, "no"))
    with aioresponses() as m:
        m.get(URL_A, exception=refused)
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            body, _ = await fetch_all(fetcher, slot)
    assert body.attempts == 2
    assert slot.answered  # the 200 answered: later timeouts of this host are retried


async def test_an_error_status_counts_as_an_answer(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=503)
        m.get(URL_A, exception=aiohttp.SocketTimeoutError("read"))
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            body, _ = await fetch_all(fetcher, slot)
    assert body.attempts == 3  # the timeout after the 503 was retried: the host is alive


async def test_tls_failure_is_not_retried(fake: FakeTime, slot: RecordingSlot) -> None:
    tls = aiohttp.ClientConnectorSSLError(connection_key(), OSError(1, "handshake failure"))
    with aioresponses() as m:
        m.get(URL_A, exception=tls)
        m.get(URL_A, status=200, body=b"ok")
        async with make_fetcher(fake) as fetcher:
            with pytest.raises(ConnectError):
                await fetch_all(fetcher, slot)
    assert len(calls(m)) == 1


async def test_proxy_credentials_never_leak(
    fake: FakeTime, slot: RecordingSlot, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = "http://user:s3cret@127.0.0.1:3128"
    exc = aiohttp.ClientConnectionError(f"Cannot connect to proxy {proxy}")
    caplog.set_level(logging.DEBUG, logger="harvester.crawl.retry")
    with aioresponses() as m:
        m.get(URL_A, exception=exc, repeat=True)
        async with make_fetcher(fake, proxy=proxy, retries=1) as fetcher:
            with pytest.raises(ConnectError) as info:
                await fetch_all(fetcher, slot)
    assert calls(m)[0].kwargs["proxy"] == proxy  # used, just never shown
    assert "s3cret" not in str(info.value)
    assert "http://***@127.0.0.1:3128" in info.value.message
    assert "retrying" in caplog.text
    assert "s3cret" not in caplog.text


# -- size cap -------------------------------------------------------------------------


async def test_declared_length_over_the_cap_fails_before_reading(
    fake: FakeTime, slot: RecordingSlot
) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"x" * 100, headers={"Content-Length": "100"})
        async with make_fetcher(fake) as fetcher:
            with pytest.raises(BodyTooLarge, match="100 is larger than 10 bytes") as info:
                await fetch_all(fetcher, slot, max_bytes=10)
    assert info.value.url == URL_A
    assert len(calls(m)) == 1  # not retried
    assert (slot.active, slot.waiting) == (0, 0)


async def test_streamed_bytes_over_the_cap_fail(fake: FakeTime, slot: RecordingSlot) -> None:
    got = b""
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"x" * 100)
        fetcher = make_fetcher(fake, chunk_size=30)
        async with fetcher, fetcher.stream(URL_A, slot, max_bytes=70) as body:
            chunks = body.chunks()
            got += await anext(chunks)
            got += await anext(chunks)
            with pytest.raises(BodyTooLarge, match="larger than 70 bytes"):
                await anext(chunks)
    assert got == b"x" * 60  # everything yielded fits under the cap
    assert (slot.active, slot.waiting) == (0, 0)


async def test_default_cap_is_max_body_bytes(fake: FakeTime, slot: RecordingSlot) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"x" * 100)
        async with make_fetcher(fake, max_body_bytes=99) as fetcher:
            with pytest.raises(BodyTooLarge):
                await fetch_all(fetcher, slot)


# -- lifecycle ------------------------------------------------------------------------


async def test_stream_needs_an_open_fetcher(fake: FakeTime, slot: RecordingSlot) -> None:
    fetcher = make_fetcher(fake)
    with pytest.raises(RuntimeError, match="async with"):
        fetcher.stream(URL_A, slot)
    async with fetcher:
        with pytest.raises(RuntimeError, match="already open"):
            await fetcher.__aenter__()
    with pytest.raises(RuntimeError, match="async with"):
        fetcher.stream(URL_A, slot)


async def test_chunks_after_the_context_exited_is_an_error(
    fake: FakeTime, slot: RecordingSlot
) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"late")
        async with make_fetcher(fake) as fetcher:
            async with fetcher.stream(URL_A, slot) as body:
                pass
            with pytest.raises(RuntimeError, match="after its stream"):
                await anext(body.chunks())


async def test_an_error_in_the_callers_block_is_not_retried(
    fake: FakeTime, slot: RecordingSlot
) -> None:
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"ok", repeat=True)
        async with make_fetcher(fake) as fetcher:
            with pytest.raises(KeyError):
                async with fetcher.stream(URL_A, slot):
                    raise KeyError("caller bug")
    assert len(calls(m)) == 1
    assert (slot.active, slot.waiting) == (0, 0)


async def test_no_more_bodies_than_max_bodies_are_read_at_once(
    fake: FakeTime, slot: RecordingSlot
) -> None:
    """Past ``max_bodies`` a stream waits before its body is handed over (its response
    was asked for), and goes on as soon as one of the others is done."""
    with aioresponses() as m:
        m.get(URL_A, status=200, body=b"<urlset/>", repeat=True)
        async with make_fetcher(fake, max_bodies=2) as fetcher:
            first, second = fetcher.stream(URL_A, slot), fetcher.stream(URL_A, slot)
            await first.__aenter__()
            await second.__aenter__()
            third = asyncio.create_task(fetch_all(fetcher, slot))
            for _ in range(20):
                await asyncio.sleep(0)
            assert not third.done()
            assert len(calls(m)) == 3  # the third response came; its body waits
            await first.__aexit__(None, None, None)
            _, data = await asyncio.wait_for(third, 5)
            assert data == b"<urlset/>"
            await second.__aexit__(None, None, None)


def test_max_bodies_must_be_at_least_one() -> None:
    with pytest.raises(ConfigError, match=r"fetch\.max_bodies"):
        FetchConfig(max_bodies=0)
