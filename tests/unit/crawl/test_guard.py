"""The SSRF guard's address policy: a table of addresses, the allowlist, config validation."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

import pytest

from harvester.config import FetchConfig, load_config
from harvester.config.requests import parse_allow
from harvester.crawl.guard import AddressPolicy, refusal_reason
from harvester.errors import ConfigError, ForbiddenAddress

if TYPE_CHECKING:
    from pathlib import Path

# address -> the reason the default policy gives (a substring), or None: allowed.
TABLE: list[tuple[str, str | None]] = [
    # IPv4 public
    ("8.8.8.8", None),
    ("93.184.215.14", None),
    ("1.1.1.1", None),
    ("100.63.255.255", None),  # just below CGNAT
    ("100.128.0.0", None),  # just above CGNAT
    ("172.15.255.255", None),  # just below 172.16/12
    ("172.32.0.0", None),  # just above
    ("223.255.255.255", None),  # just below multicast
    # IPv4 refused
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.0.0.1", "private (RFC 1918)"),
    ("172.16.0.1", "private (RFC 1918)"),
    ("172.31.255.255", "private (RFC 1918)"),
    ("192.168.1.1", "private (RFC 1918)"),
    ("100.64.0.1", "CGNAT"),
    ("100.127.255.255", "CGNAT"),
    ("169.254.169.254", "link-local (cloud metadata)"),
    ("169.254.0.1", "link-local"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("192.0.0.8", "reserved"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("192.88.99.1", "reserved"),
    # IPv6 public
    ("2606:4700:4700::1111", None),
    ("2a00:1450:4001:82b::200e", None),
    # IPv6 refused
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fc00::1", "IPv6 ULA"),
    ("fd12:3456:789a::1", "IPv6 ULA"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("febf::1", "link-local"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("2001:2::1", "benchmarking"),
    ("100::1", "discard"),
    ("64:ff9b:1::a00:1", "local-use NAT64"),
    ("4000::1", "outside global unicast"),
    ("::a00:1", "IPv4-compatible"),
    ("::127.0.0.1", "IPv4-compatible"),
    # IPv4 disguised in IPv6: unwrapped and judged by the IPv4 they carry
    ("::ffff:10.0.0.1", "IPv4-mapped 10.0.0.1: private (RFC 1918)"),
    ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1: loopback"),
    ("::ffff:a9fe:a9fe", "IPv4-mapped 169.254.169.254: link-local (cloud metadata)"),
    ("::ffff:8.8.8.8", None),
    ("64:ff9b::a00:1", "NAT64 10.0.0.1: private (RFC 1918)"),
    ("64:ff9b::7f00:1", "NAT64 127.0.0.1: loopback"),
    ("64:ff9b::808:808", None),
    ("2002:0a00:0001::", "6to4 10.0.0.1: private (RFC 1918)"),
    ("2002:a9fe:a9fe::1", "6to4 169.254.169.254"),
    ("2002:808:808::1", None),
    # Teredo: the client address is stored inverted in the last 32 bits.
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "Teredo client 10.0.0.1: private (RFC 1918)"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo client 127.0.0.1: loopback"),
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", None),
]


@pytest.mark.parametrize(("ip", "reason"), TABLE)
def test_default_policy(ip: str, reason: str | None) -> None:
    policy = AddressPolicy(allow_private=False)
    if reason is None:
        policy.check(ip)
        assert policy.reason(ip) is None
        return
    with pytest.raises(ForbiddenAddress) as info:
        policy.check(ip)
    assert ip in info.value.message
    assert reason in info.value.message
    assert info.value.kind == "forbidden_address"


@pytest.mark.parametrize(("ip", "reason"), TABLE)
def test_allow_private_switches_the_check_off(ip: str, reason: str | None) -> None:
    AddressPolicy(allow_private=True).check(ip)
    assert AddressPolicy(allow_private=True).enabled is False


def test_refusal_reason_takes_parsed_addresses() -> None:
    assert refusal_reason(ipaddress.ip_address("10.1.1.1")) == "private (RFC 1918)"
    assert refusal_reason(ipaddress.ip_address("9.9.9.9")) is None


def test_default_policy_is_refuse() -> None:
    assert AddressPolicy().enabled
    assert FetchConfig().allow_private is False
    assert FetchConfig().allow == ()


def test_the_message_names_the_host_name_it_was_resolved_from() -> None:
    with pytest.raises(ForbiddenAddress) as info:
        AddressPolicy().check("127.0.0.3", host="evil.test")
    assert (
        info.value.message == "refused to connect to 127.0.0.3 (resolved from evil.test): loopback"
    )


def test_not_an_address_is_refused() -> None:
    assert AddressPolicy().reason("evil.test") == "not an IP address"


# -- allowlist -------------------------------------------------------------------------


def test_allowlist_network_allows_only_its_addresses() -> None:
    policy = AddressPolicy(allow=("127.0.0.2/32", "10.20.0.0/16", "fd00:1::/32"))
    for ip in ("127.0.0.2", "10.20.3.4", "fd00:1::5", "::ffff:127.0.0.2"):
        policy.check(ip)
    for ip, why in [
        ("127.0.0.3", "loopback"),
        ("127.0.0.1", "loopback"),
        ("10.21.0.1", "RFC 1918"),
        ("fd00:2::1", "ULA"),
        ("169.254.169.254", "cloud metadata"),
    ]:
        with pytest.raises(ForbiddenAddress, match=why):
            policy.check(ip)


def test_allowlist_single_address_without_prefix() -> None:
    policy = AddressPolicy(allow=("127.0.0.2", "::1"))
    policy.check("127.0.0.2")
    policy.check("::1")
    with pytest.raises(ForbiddenAddress):
        policy.check("127.0.0.3")


def test_allowlist_host_name_matches_exactly_and_case_insensitively() -> None:
    policy = AddressPolicy(allow=("Intranet.Example",))
    policy.check("10.1.2.3", host="intranet.example")
    policy.check("10.1.2.3", host="INTRANET.EXAMPLE.")
    policy.check("127.0.0.1", host="intranet.example")
    for other in ("sub.intranet.example", "intranet.example.evil.test", "intranet", "evil.test"):
        with pytest.raises(ForbiddenAddress, match="RFC 1918"):
            policy.check("10.1.2.3", host=other)
    with pytest.raises(ForbiddenAddress):
        policy.check("10.1.2.3")  # no name: the name cannot vouch for it


def test_check_literal_checks_ip_literals_and_passes_names() -> None:
    policy = AddressPolicy()
    policy.check_literal("evil.test")  # a name: the proxy resolves it, we cannot judge
    policy.check_literal("8.8.8.8")
    for literal in ("127.0.0.1", "[::1]", "[::ffff:10.0.0.1]"):
        with pytest.raises(ForbiddenAddress):
            policy.check_literal(literal)


@pytest.mark.parametrize("host", ["127.1", "2130706433", "127.0.0.1.", "0177.0.0.1", "١٢٧.0.0.1"])
def test_check_literal_refuses_what_aiohttp_would_dial_as_an_address(host: str) -> None:
    # aiohttp connects to a host of digits and dots (or with a ':') as it is, never asking
    # the resolver, and the socket layer maps these legacy forms onto an address
    # (127.1 is 127.0.0.1): judged as the address text they are, they are none.
    with pytest.raises(ForbiddenAddress, match="not an IP address"):
        AddressPolicy().check_literal(host)
    AddressPolicy(allow_private=True).check_literal(host)  # the check is off


def test_repr_shows_the_allowlist() -> None:
    policy = AddressPolicy(allow=("127.0.0.2/32", "b.test", "a.test"))
    expected = "AddressPolicy(allow_private=False, allow=('127.0.0.2/32', 'a.test', 'b.test'))"
    assert repr(policy) == expected


def test_parse_allow_splits_networks_and_names() -> None:
    networks, hosts = parse_allow(["127.0.0.2/32", "::1", " Intranet.Example. ", "my_host"])
    assert networks == (ipaddress.ip_network("127.0.0.2/32"), ipaddress.ip_network("::1/128"))
    assert hosts == frozenset({"intranet.example", "my_host"})


@pytest.mark.parametrize(
    "entry",
    ["10.0.0.1/8", "10.0.0.0/33", "999.1.1.1", "http://intranet", "intranet:8080", "", "a..b"],
)
def test_parse_allow_rejects_bad_entries(entry: str) -> None:
    with pytest.raises(ValueError, match=r"not an IP network|nor a host name"):
        parse_allow([entry])


# -- config ----------------------------------------------------------------------------


def test_config_reads_the_allowlist(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[fetch]\nallow_private = false\nallow = ["127.0.0.2/32", "intranet"]\n')
    cfg = load_config(path)
    assert cfg.fetch.allow == ("127.0.0.2/32", "intranet")
    assert cfg.fetch.allow_private is False


@pytest.mark.parametrize(
    ("toml", "key", "says"),
    [
        ('allow = ["127.0.0.2/32", "10.0.0.1/8"]', "fetch.allow[1]", "host bits set"),
        ('allow = ["http://intranet"]', "fetch.allow[0]", "not an IP network"),
        ('allow = ["bad name"]', "fetch.allow[0]", "nor a host name"),
        ('allow = "127.0.0.2/32"', "fetch.allow", "must be a list"),
        ("allow = [1]", "fetch.allow[0]", "must be a string"),
        ('allow_private = "no"', "fetch.allow_private", "must be true or false"),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, toml: str, key: str, says: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f"[fetch]\n{toml}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.key == key
    assert says in info.value.message
    assert str(info.value).startswith(f"config: {key}: ")


def test_cli_style_override_of_the_allowlist() -> None:
    cfg = load_config(None, {"fetch.allow": ["127.0.0.2/32"]})
    assert cfg.fetch.allow == ("127.0.0.2/32",)
    with pytest.raises(ConfigError) as info:
        load_config(None, {"fetch.allow": ["127.0.0.2/33"]})
    assert info.value.key == "fetch.allow[0]"


def test_remembered_verdicts_change_nothing_a_policy_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("harvester.crawl.guard._VERDICTS_MAX", 4)
    policy = AddressPolicy(allow=("intranet.test", "127.0.0.2/32"))
    for _ in range(2):  # the first time judged, the second remembered
        # An allowlisted name's pass is not the address's: judged again without it.
        assert policy.reason("10.0.0.1", host="intranet.test") is None
        assert policy.reason("10.0.0.1", host="evil.test") == "private (RFC 1918)"
        assert policy.reason("10.0.0.1") == "private (RFC 1918)"
        # A name that answered a public address, then rebinds to loopback.
        assert policy.reason("93.184.215.14", host="rebind.test") is None
        assert policy.reason("127.0.0.1", host="rebind.test") == "loopback"
        assert policy.reason("127.0.0.2", host="rebind.test") is None  # the allowed network
        assert policy.reason("127.1", host="rebind.test") == "not an IP address"
    assert len(policy._verdicts) <= 4  # bounded
