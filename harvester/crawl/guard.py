"""SSRF guard: which peer addresses the fetcher may connect to (DESIGN.md, issue 4).

In: an IP address about to be dialed (and the host name it was resolved
from). Out: nothing, or ``ForbiddenAddress`` naming the address and why.
Pure and sync, stdlib only (``ipaddress``), so config validation can use it
without loading aiohttp.

By default (``fetch.allow_private = false``) every address that is not
ordinary public unicast is refused: loopback, RFC 1918, CGNAT, link-local
(169.254.169.254 is the cloud metadata service), multicast, broadcast,
reserved, unspecified, documentation and benchmarking ranges, IPv6 ULA,
link-local and site-local, and IPv6 forms that carry an IPv4 address
(IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32), which are
unwrapped and judged by the IPv4 they embed. The tables below are explicit
rather than ``ip.is_private``/``is_global``, whose answers changed between
Python patch releases. ``fetch.allow`` lists networks (CIDR) and host names
(exact, case-insensitive) that pass anyway: tests, benchmarks, intranets.
``allow_private = true`` switches the address check off altogether.

Where it is enforced, and why there (``harvester.crawl.connector``), through aiohttp's
public hooks only (issue 46: its private connector methods change between releases):

* names: the connector's ``resolver=`` is a ``connector.GuardedResolver``, which hands
  aiohttp only the answers this policy allows. aiohttp's own DNS cache is off, so it
  asks at every new connection (every redirect hop to a new host, every reconnect)
  and dials exactly the answers it got back: a name that rebinds from a public to a
  private address between two connections is caught on the second. Addresses of a
  name are filtered, not all-or-nothing: only allowed ones are dialed, and the
  request fails only when none is left.
* IP literals: aiohttp never hands them to the resolver; it takes every host with a
  ``:`` or of digits and dots only for an address and dials it as it is (from 3.14.1
  it first refuses the legacy IPv4 forms such as ``127.1``; up to 3.14.0 it dials them,
  and the socket layer reaches 127.0.0.1).
  ``connector.HopGuard``, a client middleware, checks such a host
  (``AddressPolicy.check_literal``) on every request aiohttp sends, redirect hops
  included, before any connection. A literal is judged by its text alone, so checking
  it per request rather than per connection costs a string test, nothing more.

Why not aiohttp's ``socket_factory`` (3.12), which does see every dialed address: it
gets only the ``getaddrinfo``-style tuple (``canonname`` is empty), so it cannot tell
an allowlisted name's address from the same address as a literal, nor the proxy from
a target; and what it raises is not reliably the request's error (aiohttp 3.14,
aiohappyeyeballs 2.7: a non-``OSError`` passes through for a host with one address,
but with several the happy-eyeballs race drops it and the connect fails with an
``IndexError``; an ``OSError`` is kept only as the ``os_error`` of a generic
``ClientConnectorError``). A check of the URL before the request alone (the aiohttp
cookbook's middleware) sees neither a name's addresses nor rebinding, hence the two
hooks above.

With a proxy, the proxy resolves target names, so only IP-literal targets can be
checked here (the middleware does, before the proxy is asked); the proxy itself is
operator configuration and is trusted. The same holds for a ``socks5h://`` proxy
(``harvester.crawl.socks``: names resolved by the proxy); with ``socks5://`` (names
resolved here) a name's addresses are checked at every new connection, before the
proxy is asked to connect.

Example::

    policy = AddressPolicy(allow_private=False, allow=("127.0.0.2/32",))
    policy.check("127.0.0.2")  # allowed by the allowlist
    policy.check("10.0.0.1")   # ForbiddenAddress: 10.0.0.1 is private (RFC 1918)
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any, TypeVar

from harvester.config.requests import parse_allow
from harvester.errors import ForbiddenAddress

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["ALLOWED_SCHEMES", "AddressPolicy", "is_literal", "refusal_reason"]

ALLOWED_SCHEMES = frozenset({"http", "https"})
_VERDICTS_MAX = 8192  # addresses whose verdict a policy remembers (about 1 MB); then cleared

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_Answer = TypeVar("_Answer", bound="Mapping[str, Any]")  # a resolver answer (aiohttp's dict)

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# IANA IPv4 special-purpose registry (RFC 6890 and successors). Order matters:
# the first match names the reason, so specific blocks come before 240.0.0.0/4.
_IPV4_REFUSED: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified"),  # "this network"; 0.0.0.0 reaches localhost on Linux
    (_V4("10.0.0.0/8"), "private (RFC 1918)"),
    (_V4("100.64.0.0/10"), "CGNAT (RFC 6598)"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local (cloud metadata)"),
    (_V4("172.16.0.0/12"), "private (RFC 1918)"),
    (_V4("192.0.0.0/24"), "reserved (IETF protocol assignments)"),
    (_V4("192.0.2.0/24"), "reserved (documentation)"),
    (_V4("192.88.99.0/24"), "reserved (6to4 relay anycast)"),
    (_V4("192.168.0.0/16"), "private (RFC 1918)"),
    (_V4("198.18.0.0/15"), "reserved (benchmarking)"),
    (_V4("198.51.100.0/24"), "reserved (documentation)"),
    (_V4("203.0.113.0/24"), "reserved (documentation)"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("255.255.255.255/32"), "broadcast"),
    (_V4("240.0.0.0/4"), "reserved"),
)

# IPv6 blocks refused outright. Embedding forms (mapped, NAT64, 6to4, Teredo)
# are handled before this table; anything outside 2000::/3 after it is
# refused too, since global unicast is only ever allocated from there.
_IPV6_REFUSED: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("::/96"), "IPv4-compatible (deprecated)"),
    (_V6("64:ff9b:1::/48"), "reserved (local-use NAT64)"),
    (_V6("100::/64"), "reserved (discard-only)"),
    (_V6("2001:2::/48"), "reserved (benchmarking)"),
    (_V6("2001:db8::/32"), "reserved (documentation)"),
    (_V6("2001::/23"), "reserved (IETF protocol assignments)"),
    (_V6("3fff::/20"), "reserved (documentation)"),
    (_V6("fc00::/7"), "IPv6 ULA (unique local)"),
    (_V6("fe80::/10"), "IPv6 link-local"),
    (_V6("fec0::/10"), "IPv6 site-local (deprecated)"),
    (_V6("ff00::/8"), "multicast"),
)
_GLOBAL_UNICAST = _V6("2000::/3")
_NAT64 = _V6("64:ff9b::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 form carries, with the form's name; None for plain IPv6."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    if ip.teredo is not None:
        return ip.teredo[1], "Teredo client"  # (server, client); the client is the peer
    return None


def refusal_reason(ip: IPAddress) -> str | None:
    """Why the default policy refuses ``ip`` (e.g. ``"loopback"``), or None if it is public.

    >>> refusal_reason(ipaddress.ip_address("169.254.169.254"))
    'link-local (cloud metadata)'
    >>> refusal_reason(ipaddress.ip_address("::ffff:10.0.0.1"))
    'IPv4-mapped 10.0.0.1: private (RFC 1918)'
    >>> refusal_reason(ipaddress.ip_address("93.184.215.14")) is None
    True
    """
    if isinstance(ip, ipaddress.IPv4Address):
        for net, reason in _IPV4_REFUSED:
            if ip in net:
                return reason
        return None
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        v4, form = embedded
        inner = refusal_reason(v4)
        return None if inner is None else f"{form} {v4}: {inner}"
    for net6, reason in _IPV6_REFUSED:
        if ip in net6:
            return reason
    if ip not in _GLOBAL_UNICAST:
        return "reserved (outside global unicast 2000::/3)"
    return None


def is_literal(host: str) -> bool:
    """Whether aiohttp takes ``host`` (a URL's, brackets removed) for an IP address.

    Its test (``helpers.is_ip_address``, the same in 3.12 to 3.14): a ``:``, or digits
    and dots only. Such a host is connected to as it is, never handed to the resolver.

    >>> is_literal("127.1"), is_literal("::1"), is_literal("example.com")
    (True, True, False)
    """
    return ":" in host or host.replace(".", "").isdigit()


class AddressPolicy:
    """The address check of one fetcher: refuse non-public peers unless allowed.

    ``allow_private`` turns the check off; ``allow`` holds CIDR networks and
    host names (see ``config.requests.parse_allow``) that pass even when private.

    Example::

        policy = AddressPolicy(allow_private=False, allow=("intranet.example",))
        policy.check("10.1.2.3", host="intranet.example")  # allowed by name
        policy.check("10.1.2.3", host="evil.test")  # ForbiddenAddress
    """

    __slots__ = ("_allow_private", "_hosts", "_networks", "_verdicts")

    def __init__(self, *, allow_private: bool = False, allow: Iterable[str] = ()) -> None:
        self._allow_private = allow_private
        networks, hosts = parse_allow(allow)
        self._networks = networks  # dialed addresses inside these always pass
        self._hosts = hosts  # names whose every address passes (lower case, no trailing dot)
        self._verdicts: dict[str, str | None] = {}  # address text -> reason (None: allowed)

    def __repr__(self) -> str:
        allow = [str(n) for n in self._networks] + sorted(self._hosts)
        return f"AddressPolicy(allow_private={self._allow_private}, allow={tuple(allow)!r})"

    @property
    def enabled(self) -> bool:
        """False when ``allow_private`` switched the address check off."""
        return not self._allow_private

    def allows_host(self, host: str) -> bool:
        """Is the host name itself on the allowlist (then any address it resolves to passes)?"""
        return host.lower().rstrip(".") in self._hosts

    def reason(self, ip: str, *, host: str | None = None) -> str | None:
        """Why ``ip`` (reached as ``host``) is refused, or None if it may be dialed.

        The verdict on an address is remembered (``_verdicts``, bounded): past the host
        name's allowlisting, it depends on the address's text and this policy alone,
        both fixed, so a name's answer is judged by a lookup at its next connection, and
        a changed answer (rebinding) is another text, judged afresh.
        """
        if self._allow_private or (host is not None and self._hosts and self.allows_host(host)):
            return None
        try:
            return self._verdicts[ip]
        except KeyError:
            pass
        why = self._address_reason(ip)
        if len(self._verdicts) >= _VERDICTS_MAX:
            self._verdicts.clear()
        self._verdicts[ip] = why
        return why

    def _address_reason(self, ip: str) -> str | None:
        """``reason`` for an address no allowlisted name led to."""
        try:
            # A scope ("fe80::1%eth0") says which interface, not which address.
            address = ipaddress.ip_address(ip.partition("%")[0])
        except ValueError:
            return "not an IP address"
        why = refusal_reason(address)
        if why is None or self._allowed_network(address):
            return None
        return why

    def check(self, ip: str, *, host: str | None = None) -> None:
        """Return if ``ip`` may be dialed; raise ``ForbiddenAddress`` saying why not."""
        why = self.reason(ip, host=host)
        if why is not None:
            via = f" (resolved from {host})" if host and host != ip else ""
            raise ForbiddenAddress(f"refused to connect to {ip}{via}: {why}")

    def allowed(self, answers: list[_Answer], host: str) -> list[_Answer]:
        """The resolver ``answers`` (dicts with the address under ``"host"``) that may be
        dialed; raises ``ForbiddenAddress`` naming why when there were some and none may.

        Filter, not all-or-nothing: a name with one public and one private answer is
        served from the public one only.
        """
        if not self.enabled:
            return answers
        kept = [a for a in answers if self.reason(a["host"], host=host) is None]
        if answers and not kept:
            self.check(answers[0]["host"], host=host)  # raises ForbiddenAddress, naming why
        return kept

    def check_literal(self, host: str) -> None:
        """``check`` a URL's ``host`` if it is an IP literal (``[v6]`` too); a name passes.

        An IP literal as aiohttp reads a host (``helpers.is_ip_address``): anything with a
        ``:`` or of digits and dots only, which it connects to without asking the resolver.
        Such a host that is no address (``127.1``, ``2130706433``: the socket layer would
        still map them to one) is refused as "not an IP address".
        """
        if self._allow_private:
            return
        literal = host.removeprefix("[").removesuffix("]")
        if is_literal(literal):
            self.check(literal)

    def _allowed_network(self, address: IPAddress) -> bool:
        candidates: list[IPAddress] = [address]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates.append(address.ipv4_mapped)  # "::ffff:127.0.0.2" is 127.0.0.2 on the wire
        return any(a in net for a in candidates for net in self._networks)
