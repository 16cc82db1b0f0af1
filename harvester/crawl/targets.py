"""What the fetcher may request at all: an http(s) URL whose host a client can name.

In: a URL about to be requested (``check_target``, before the host's slot is taken: a
refused URL costs the host no politeness time) and each redirect hop aiohttp is about
to follow (``valid_hop``, a client middleware). Out: nothing, or the ``ForbiddenAddress``
/ ``InvalidURL`` naming the URL. Which *addresses* may be dialed is the SSRF guard's
(``guard.py``, enforced by the connector). Split from ``fetch.py`` to keep it to the
request and its attempts.

``check_target`` and ``valid_hop`` remember the authorities found valid (one bounded set):
the verdict is a pure function of the authority's text (``valid_authority`` reads
nothing else of the URL and nothing outside it), so a host's next request, and its
first request's hop, cost a set lookup instead of the regular expressions, the IDNA and
``ipaddress`` parses. Only "valid" is kept, an
invalid authority is judged again each time, and no address is: which addresses may be
dialed stays the guard's, judged at every connection.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harvester.crawl.guard import ALLOWED_SCHEMES
from harvester.errors import ForbiddenAddress, InvalidURL
from harvester.urls.validate import valid_authority

if TYPE_CHECKING:
    import aiohttp
    from aiohttp.client_middlewares import ClientHandlerType

__all__ = ["check_target", "valid_hop"]

_VALID_MAX = 4096  # authorities remembered valid (a few hundred KB); cleared when full
# Authorities valid_authority passed, as they stand in the URL text (userinfo and port
# included): yarl's raw_authority of a hop (its str() differs at most by a default port
# left out, which changes no verdict), the plain spelling's (_PLAIN) of a target.
_VALID: set[str] = set()
# "http(s)://" and the authority as valid_authority reads it, when it ends where the URL
# parser's would: the text is then all both of check_target's verdicts depend on.
_PLAIN = re.compile(r"https?://([^/?#\t\r\n]*)(?=[/?#]|\Z)").match


def check_target(url: str) -> None:
    """Raise ``ForbiddenAddress`` for a scheme other than http(s), ``InvalidURL`` for a host
    no client can name (aiohttp would raise a bare ``UnicodeError`` on ``xn--zz``).

    A URL spelled plainly (``http://`` or ``https://``, then an authority without tabs or
    newlines ending at ``/``, ``?``, ``#`` or the end) whose authority passed before
    passes at once: both checks read nothing else of it.
    """
    plain = _PLAIN(url)
    if plain is not None and plain.group(1) in _VALID:
        return
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise ForbiddenAddress(f"scheme {scheme or '(none)'!r} is not http or https", url=url)
    if not valid_authority(url):
        raise InvalidURL("the URL's host can be no DNS name or IP address", url=url)
    if plain is not None:
        _remember(_VALID, plain.group(1))


async def valid_hop(
    req: aiohttp.ClientRequest, handler: ClientHandlerType
) -> aiohttp.ClientResponse:
    """aiohttp client middleware: no request, redirect hops included, to a host no client
    can name (``stream`` checks the first URL itself; aiohttp follows redirects).

    Before the connection, so such a name is never looked up; and yarl would raise a bare
    ``UnicodeError`` on an A-label that does not decode (``xn--zz``), which no caller
    expects.
    """
    url = req.url
    authority = url.raw_authority
    if authority not in _VALID:
        if not valid_authority(target := str(url)):
            raise InvalidURL(f"redirect to a host that can be no DNS name or IP address: {target}")
        _remember(_VALID, authority)
    return await handler(req)


def _remember(valid: set[str], authority: str) -> None:
    """Add ``authority`` to ``valid``, emptied first when full (bounded memory)."""
    if len(valid) >= _VALID_MAX:
        valid.clear()
    valid.add(authority)
