"""harvester.config.crawl: FetchConfig's checks and repr, and split_nameserver."""

from __future__ import annotations

import pytest

from harvester.config import load_config


def test_proxy_credentials_masked() -> None:
    cfg = load_config(None, {"fetch.proxy": "http://user:secret@proxy:3128"})
    assert "secret" not in repr(cfg.fetch)
    assert "secret" not in repr(cfg)


def test_min_speed_zero_switches_the_floor_off() -> None:
    cfg = load_config(None, {"fetch.min_speed": 0, "fetch.min_speed_window": 0.0})
    assert cfg.fetch.min_speed == 0


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("127.0.0.1", ("127.0.0.1", 53)),
        ("127.0.0.1:5353", ("127.0.0.1", 5353)),
        ("::1", ("::1", 53)),
        ("[::1]:5353", ("::1", 5353)),
        ("[::1]", ("::1", 53)),
    ],
)
def test_nameserver_forms(entry: str, expected: tuple[str, int]) -> None:
    from harvester.config import split_nameserver

    assert split_nameserver(entry) == expected
    cfg = load_config(None, {"fetch.nameservers": [entry]})
    assert cfg.fetch.nameservers == (entry,)
