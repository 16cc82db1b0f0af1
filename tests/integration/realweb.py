"""What the realweb benchmarks' integration tests share: harvester's settings for them.

``FAST`` shortens harvester's timeouts and loosens its politeness (through
``--harvester-config``, only in these tests: the benches measure the defaults), so the
dead, hanging, slow and long-chain sites cost seconds.
"""

from __future__ import annotations

FAST = """
[fetch]
connect_timeout = 1.0
first_byte_timeout = 1.0
late_first_byte_timeout = 2.0
read_timeout = 1.0
total_timeout = 4.0
retries = 0

[politeness]
max_crawl_delay = 0.02

[politeness.default]
rate = 50.0
concurrency = 8
"""
