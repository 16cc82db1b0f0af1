"""Which hosts get a late attempt, and how (run/late.py: ``LatePool.wanted``)."""

from __future__ import annotations

import pytest

from harvester.config import load_config
from harvester.crawl.report import HostReport
from harvester.crawl.seed import Seed
from harvester.errors import ConfigError
from harvester.run.late import LatePool

BARE = Seed("a.com", "https://a.com", None, None, 1, explicit_scheme=False)
EXPLICIT = Seed("a.com", "https://a.com", None, None, 1, explicit_scheme=True)


def timed_out(kind: str | None, **fields: object) -> HostReport:
    report = HostReport("a.com")
    report.first_contact_timeout = kind
    for name, value in fields.items():
        setattr(report, name, value)
    return report


def pool(late: float = 45.0) -> LatePool:
    return LatePool(load_config(None, {"fetch.late_first_byte_timeout": late}))


def test_a_first_byte_timeout_is_tried_again_as_it_was() -> None:
    assert pool().wanted(BARE, timed_out("first_byte")) == BARE


def test_an_https_connect_timeout_of_a_bare_domain_is_tried_over_http() -> None:
    again = pool().wanted(BARE, timed_out("connect"))
    assert again is not None
    assert (again.origin, again.host, again.explicit_scheme) == ("http://a.com", "a.com", True)
    assert pool().wanted(EXPLICIT, timed_out("connect")) == EXPLICIT  # as the user wrote it


def test_no_late_attempt_without_a_first_contact_timeout_or_after_a_read() -> None:
    late = pool()
    assert late.wanted(BARE, timed_out(None)) is None
    assert late.wanted(BARE, timed_out("first_byte", urls=3)) is None  # nothing emitted twice
    assert late.wanted(BARE, timed_out("first_byte", sitemaps_fetched=1)) is None
    assert late.wanted(BARE, timed_out("first_byte", deferred="2030-01-01T00:00:00Z")) is None
    assert pool(0).wanted(BARE, timed_out("first_byte")) is None  # off


def test_a_negative_late_timeout_is_refused_naming_its_key() -> None:
    with pytest.raises(ConfigError, match=r"fetch\.late_first_byte_timeout"):
        load_config(None, {"fetch.late_first_byte_timeout": -1})
