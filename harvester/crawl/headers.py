"""Request headers: extra headers, per-host headers and cookies.

In: ``fetch.headers`` (every request), ``[politeness.hosts."NAME"]`` ``headers`` and
``cookies`` (that host only), checked when the config was loaded
(``harvester.config.requests``). Out: ``HostHeaders``, the aiohttp client middleware
that adds a host's own headers and cookies to each request sent to that host, and
``parse_header`` for the ``--header`` flag.

Why a middleware and not the ``headers=`` of the request: aiohttp sends a request's
headers again on every redirect hop, to whatever host it goes to, so a login cookie
for ``a.example`` would leak to a redirect target on ``b.example``. A middleware runs
once per hop (aiohttp >= 3.12), on the hop's own URL, so a host's headers and cookies
reach that host only. ``fetch.headers`` are meant for every host and go on the session.

Example::

    extra = HostHeaders(cfg.politeness)
    session = aiohttp.ClientSession(middlewares=(extra,) if extra else ())
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import ClientRequest, ClientResponse
    from aiohttp.client_middlewares import ClientHandlerType

    from harvester.config import PolitenessConfig

__all__ = ["HostHeaders", "parse_header"]


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` (the ``--header`` flag) → (name, value); ValueError if malformed.

    >>> parse_header("X-Team: data ")
    ('X-Team', 'data')
    """
    name, sep, value = text.partition(":")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"{text!r} is not 'Name: value'")
    return name, value.strip()


class HostHeaders:
    """aiohttp client middleware: each request gets its host's own headers and cookies.

    The host is the request's ``host[:port]`` (``scheduler.host_key``'s spelling);
    an override keyed ``"NAME:PORT"`` falls back to ``"NAME"``'s, as the scheduler's
    politeness does. Cookies are added to any the session's jar already set.
    False (``bool``) when no host has any, so the session needs no middleware.
    """

    __slots__ = ("_hosts",)

    def __init__(self, cfg: PolitenessConfig) -> None:
        # host key -> (headers, the Cookie header value); only hosts that have any.
        self._hosts: dict[str, tuple[Mapping[str, str], str]] = {
            host: (policy.headers, "; ".join(f"{k}={v}" for k, v in policy.cookies.items()))
            for host, policy in cfg.hosts.items()
            if policy.headers or policy.cookies
        }

    def __bool__(self) -> bool:
        return bool(self._hosts)

    def extra_for(self, host: str) -> tuple[Mapping[str, str], str] | None:
        """The headers and Cookie value for ``host`` (a ``host_key``), or None."""
        found = self._hosts.get(host)
        if found is None:
            name, sep, port = host.rpartition(":")
            if sep and port.isdigit():
                found = self._hosts.get(name)
        return found

    async def __call__(self, req: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        """Add the hop's host's headers and cookies, then send it on."""
        host = req.url.host_port_subcomponent
        found = self.extra_for(host) if host else None
        if found is not None:
            headers, cookie = found
            req.headers.update(headers)
            if cookie:
                jar = req.headers.get("Cookie")  # what the session's cookie jar set, if any
                req.headers["Cookie"] = f"{jar}; {cookie}" if jar else cookie
        return await handler(req)
