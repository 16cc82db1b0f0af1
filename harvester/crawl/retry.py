"""The fetcher's retry policy: which errors are worth another attempt, and how long to wait.

In: a ``FetchError`` of one attempt (or what an attempt without a response raised), a
Retry-After header, the ``FetchConfig``. Out: whether the error is transient
(``retryable``), the seconds a server asked for (``retry_after_seconds``, ``not_before``),
the classified ``FetchError`` of an attempt that got no response (``attempt_error``) and
the wait before the next attempt, or None when the error is final (``next_delay``).

Pure: no I/O. Split from ``fetch.py`` so the fetcher keeps to the session, the request
and the loop of attempts; ``fetch`` re-exports ``not_before`` and ``retry_after_seconds``.
"""

from __future__ import annotations

import datetime
import email.utils
import logging
import re
import time
from typing import TYPE_CHECKING

import aiohttp

from harvester.crawl.body import map_error, redact
from harvester.errors import (
    Blocked,
    ConnectError,
    FetchError,
    FetchTimeout,
    ForbiddenAddress,
    HTTPStatusError,
    InvalidURL,
)

if TYPE_CHECKING:
    import random

    from harvester.config import FetchConfig

__all__ = [
    "HONOUR_RETRY_AFTER",
    "attempt_error",
    "next_delay",
    "not_before",
    "retry_after_seconds",
    "retryable",
]

logger = logging.getLogger(__name__)

_DELTA_SECONDS = re.compile(r"\d+(?:\.\d+)?")
# Statuses whose Retry-After is waited for (see not_before for one longer than a run waits).
HONOUR_RETRY_AFTER = frozenset({429, 503})


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait per a Retry-After header: delta-seconds or an HTTP-date.

    ``now`` is the wall-clock time (``time.time()`` by default) an HTTP-date is
    measured from; a date in the past means 0. Returns None when the header is
    absent or unreadable (the caller then falls back to its own backoff).

    >>> retry_after_seconds("120")
    120.0
    >>> retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
    10.0
    """
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" or no zone: not quite HTTP-date; read it as GMT
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def not_before(error: BaseException, cfg: FetchConfig) -> float | None:
    """The seconds a 429/503 asked to be left alone, when longer than a run waits.

    None for any other error, and for a Retry-After within ``cfg.retry_after_max``
    (the fetcher waited it out and retried). Otherwise the fetcher gave up at
    once, and the host is not to be asked again before that many seconds.
    """
    if not isinstance(error, HTTPStatusError) or error.retry_after is None:
        return None
    return error.retry_after if error.retry_after > cfg.retry_after_max else None


def retryable(error: FetchError) -> bool:
    """Whether another attempt may get another answer."""
    # Transient by nature: resets, stalls, overload. A missing name (DNSError),
    # a redirect loop, a bad URL or a refused address (ForbiddenAddress) will not
    # change in the next few seconds.
    if isinstance(error, Blocked):  # a challenge page: it would be met again
        return False
    if isinstance(error, HTTPStatusError):
        return error.status in (408, 429) or error.status >= 500
    return isinstance(error, ConnectError | FetchTimeout)


def attempt_error(
    cfg: FetchConfig, exc: BaseException, url: str, *, first: bool, expired: bool
) -> FetchError:
    """The ``FetchError`` of an attempt that got no response; raised when it is final.

    In: what the attempt raised, whether it was first contact and whether the file's
    total deadline had passed. A refused address or redirect hop is never retried.
    """
    if isinstance(exc, TimeoutError):
        if expired:
            msg = f"total deadline of {cfg.total_timeout:g}s passed"
            raise FetchTimeout(msg, url=url) from exc
        return _timeout_error(cfg, exc, url, first)
    if isinstance(exc, aiohttp.ClientError):
        return map_error(exc, url, cfg)
    if isinstance(exc, ForbiddenAddress):
        # Raised by the guard (connector, socks): it knows the peer, not the URL.
        raise ForbiddenAddress(exc.message, url=url) from exc
    if isinstance(exc, InvalidURL):  # a redirect hop (targets.valid_hop)
        raise InvalidURL(exc.message, url=url) from exc
    raise exc


def _timeout_error(cfg: FetchConfig, exc: TimeoutError, url: str, first: bool) -> FetchTimeout:
    """The ``FetchTimeout`` of a connect or response-wait timeout, saying which it was."""
    connect = isinstance(exc, aiohttp.ConnectionTimeoutError)
    if connect:
        what = f"connect timeout ({cfg.connect_timeout:g}s)"
    else:
        waited = cfg.first_byte_timeout if first else cfg.read_timeout
        what = f"no response within {waited:g}s"
    if first:
        what += " on first contact, not retried"
    error = FetchTimeout(what, url=url)
    if first:
        error.first_contact = "connect" if connect else "first_byte"
    return error


def next_delay(
    cfg: FetchConfig,
    rng: random.Random,
    failed: tuple[FetchError, BaseException | None],
    first: bool,
    tried: tuple[int, int],
    times: tuple[float, float],
) -> float | None:
    """Seconds to wait before the next attempt, or None: the error is final.

    ``failed``: the attempt's error and what raised it (None: a status); ``first``: the
    attempt was first contact; ``tried``: the attempt that failed (1 for the first) and
    the retries allowed; ``times``: the loop's time now and the request's deadline.
    The caller raises a final error holding no reference to it in its own frame: the
    traceback holds that frame, so a local would make a cycle of error, traceback and
    frames, one per failed request (a 404 among them), for the collector to find.
    """
    error, cause = failed
    attempt, retries = tried
    # First contact decides quickly: a host that let a connect or its first
    # response time out is dead or hanging, and each retry would cost the
    # same timeout again. A failed TLS handshake (a certificate problem, no
    # TLS on the port) will not mend in a few seconds either.
    if (first and isinstance(error, FetchTimeout)) or isinstance(cause, aiohttp.ClientSSLError):
        return None
    delay = _retry_delay(cfg, rng, error, attempt, retries)
    # Give up now rather than sleep into a FetchTimeout: the last real
    # error (say, the 429 and its Retry-After) says more to the report.
    now, deadline = times
    if delay is None or now + delay >= deadline:
        return None
    logger.debug(
        "retrying %s in %.2fs after attempt %d: %s",
        redact(error.url or ""),
        delay,
        attempt,
        error.message,
    )
    return delay


def _retry_delay(
    cfg: FetchConfig, rng: random.Random, error: FetchError, attempt: int, retries: int
) -> float | None:
    """Seconds to wait before attempt ``attempt + 1``, or None to give up."""
    if attempt > retries or not retryable(error):
        return None
    if isinstance(error, HTTPStatusError) and error.retry_after is not None:
        # The server said when. Longer than a run waits ("come back tomorrow"):
        # give up now, rather than ask again after retry_after_max.
        return None if not_before(error, cfg) is not None else error.retry_after
    # Full jitter (AWS architecture blog): uniform over [0, capped exponential].
    ceiling = min(cfg.backoff_max, cfg.backoff_base * 2 ** min(attempt - 1, 62))
    return rng.uniform(0.0, ceiling)
