"""harvester.urls.validate: which authorities a client could connect to (issue 30 item 1)."""

from __future__ import annotations

import pytest

from harvester.urls.validate import valid_authority

VALID = [
    "https://example.com/x",
    "https://Example.COM./x",  # upper case, a trailing dot
    "http://a.b.c.d.e.example.co.uk",
    "https://ex_ample.example.com/x",  # underscores: common in the wild, browsers accept them
    "https://-x-.example.com/",
    "http://localhost:8080/",
    "http://127.0.0.1:65535/x",
    "http://1.2.3.4/x",
    "http://[::1]/x",
    "http://[2001:db8::1]:443/x?q",
    "https://user:pass@example.com:8443/x",
    "https://a@b@example.com/x",  # userinfo up to the last '@'
    "https://example.com:/x",  # an empty port: the default
    "https://例え.jp/x",
    "https://bücher.example/x",
    "https://exa\nmple.com/x",  # newlines and tabs are removed (WHATWG)
    "https://example.com\t:8080/x",
    "https://" + "a" * 63 + ".com/x",
    "https://" + ".".join(["a" * 49] * 5) + "/x",  # 249 characters
    "https://example.com?q=1",
    "https://example.com#top",
]

INVALID = [
    "https://exa mple.com/x",  # a space in the host
    "http://[::1/x",  # an unclosed IPv6 bracket
    "http://[::1]x/",
    "http://[example.com]/x",
    "http://[fe80::1%25eth0]/x",  # a zone
    "http://www.example.com:99999/x",  # port out of range
    "http://www.example.com:0/x",
    "http://www.example.com:8o/x",
    "http://www.example.com:" + "9" * 5000 + "/x",
    "http://www.example.com:80:80/x",
    "http://" + "a" * 300 + ".com/x",  # a 300-character label
    "https://" + "a" * 64 + ".com/x",
    "https://" + ".".join(["a" * 50] * 6) + "/x",  # a name over 253 characters
    "http:///x",  # an empty host
    "http://:80/x",
    "http://user@/x",
    "http://a..b/x",
    "http://.example.com/x",
    "http://exa%20mple.com/x",
    "http://example.com\\x",
    "http://999.1.1.1/x",  # a numeric last label must be an IPv4 address
    "http://1.2.3/x",
    "http://12345/x",
    "https://exa mple.café/x",
    "https://\u2028.example/x",
]


@pytest.mark.parametrize("loc", VALID)
def test_valid(loc: str) -> None:
    assert valid_authority(loc)


@pytest.mark.parametrize("loc", INVALID)
def test_invalid(loc: str) -> None:
    assert not valid_authority(loc)
