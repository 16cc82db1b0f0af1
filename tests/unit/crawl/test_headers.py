"""crawl/headers.py: header, cookie and proxy checks, --header, and the per-host middleware."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pytest

from harvester.cli import build_parser
from harvester.cli.options import overrides
from harvester.config import HostPolicy, PolitenessConfig, load_config
from harvester.crawl.headers import HostHeaders, parse_header
from harvester.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path


def test_parse_header() -> None:
    assert parse_header("X-Team:  data  ") == ("X-Team", "data")
    assert parse_header("X-Empty:") == ("X-Empty", "")
    for bad in ("no colon", ": value"):
        with pytest.raises(ValueError, match="is not 'Name: value'"):
            parse_header(bad)


def test_header_flags_add_to_the_config_table(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[fetch.headers]\n"Accept-Language" = "en"\n"X-Team" = "file"\n')
    ns = build_parser().parse_args(
        ["run", "e.com", "--header", "X-Team: cli", "--header", "X-Run: 7"]
    )
    cfg = load_config(path, overrides(ns))
    assert dict(cfg.fetch.headers) == {"Accept-Language": "en", "X-Team": "cli", "X-Run": "7"}


def test_a_malformed_header_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["run", "e.com", "--header", "nocolon"])
    assert info.value.code == 2
    assert "--header: 'nocolon' is not 'Name: value'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("toml", "key", "message"),
    [
        ('[fetch.headers]\n"Bad Name" = "x"\n', "fetch.headers", "not a header name"),
        ('[fetch.headers]\n"X-A" = "a\\r\\nX-Injected: 1"\n', "fetch.headers", "line break"),
        ('[fetch.headers]\n"Host" = "other"\n', "fetch.headers", "not a header name"),
        ('[fetch.headers]\n"User-Agent" = "x"\n', "fetch.headers", "fetch.user_agent"),
        (
            '[politeness.hosts."a.com"]\ncookies = { "s" = "a;b" }\n',
            "politeness.hosts.'a.com'.cookies",
            "may not hold",
        ),
        (
            '[politeness.hosts."a.com"]\nheaders = { "X-A" = "a\\nb" }\n',
            "politeness.hosts.'a.com'.headers",
            "line break",
        ),
        ("[politeness.default]\nverify_tls = false\n", "politeness.default", "per host"),
        ('[fetch]\nproxy = "ftp://p:21"\n', "fetch.proxy", "is not one of"),
        ('[fetch]\nproxy = "socks5://p"\n', "fetch.proxy", "needs a port"),
        ('[fetch]\nproxy = "socks5://user:secret@"\n', "fetch.proxy", "has no host"),
    ],
)
def test_bad_request_options_name_the_key(
    tmp_path: Path, toml: str, key: str, message: str
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert info.value.key == key
    assert "secret" not in str(info.value)  # a proxy URL's credentials are never repeated


def test_socks_and_http_proxies_are_accepted() -> None:
    for proxy in ("http://p:3128", "socks5://u:p@127.0.0.1:1080", "socks5h://127.0.0.1:1080"):
        assert load_config(None, {"fetch.proxy": proxy}).fetch.proxy == proxy


def test_per_host_headers_cookies_and_tls(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[politeness.hosts."a.com"]\nheaders = { "X-Key" = "k" }\ncookies = { "consent" = "yes" }\n'
        "verify_tls = false\n"
    )
    policy = load_config(path).politeness.policy_for("a.com")
    assert dict(policy.headers) == {"X-Key": "k"}
    assert dict(policy.cookies) == {"consent": "yes"}
    assert policy.verify_tls is False
    assert "'X-Key': '***'" in repr(policy)  # values may be credentials: never printed
    assert "yes" not in repr(policy)


class FakeRequest:
    def __init__(self, url: str, headers: dict[str, str]) -> None:
        import yarl

        self.url = yarl.URL(url)
        self.headers = headers


async def test_the_middleware_adds_a_hosts_own_headers_and_cookies_only_to_it() -> None:
    hosts = MappingProxyType(
        {
            "a.com": HostPolicy(
                headers=MappingProxyType({"X-Key": "k"}),
                cookies=MappingProxyType({"s": "1", "t": "2"}),
            ),
            "b.com:8080": HostPolicy(headers=MappingProxyType({"X-B": "b"})),
            "c.com": HostPolicy(rate=5.0),  # nothing to add
        }
    )
    extra = HostHeaders(PolitenessConfig(hosts=hosts))
    assert extra
    assert not HostHeaders(PolitenessConfig())
    sent: list[dict[str, str]] = []

    async def handler(req: Any) -> Any:
        sent.append(dict(req.headers))
        return "response"

    cases = [
        ("https://a.com/x", {}),
        ("http://a.com:8443/x", {"Cookie": "jar=1"}),  # a port falls back to the name's
        ("http://b.com:8080/", {}),
        ("http://b.com/", {}),  # b.com:8080's headers are not b.com's
        ("http://c.com/", {}),
    ]
    for url, headers in cases:
        middleware: Any = extra  # FakeRequest stands for aiohttp's ClientRequest
        assert await middleware(FakeRequest(url, headers), handler) == "response"
    assert sent == [
        {"X-Key": "k", "Cookie": "s=1; t=2"},
        {"X-Key": "k", "Cookie": "jar=1; s=1; t=2"},
        {"X-B": "b"},
        {},
        {},
    ]


def test_a_socks_proxy_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "aiohttp_socks" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"harvester-sitemaps\[socks\]") as info:
        load_config(None, {"fetch.proxy": "socks5h://127.0.0.1:1080"})
    assert info.value.key == "fetch.proxy"
    assert load_config(None, {"fetch.proxy": "http://127.0.0.1:3128"}).fetch.proxy  # no extra
