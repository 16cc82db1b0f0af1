"""``benchmarks.bench_stage``: the reading and batching stage keeps every URL of a corpus.

A pass that dropped or doubled URLs would make its CPU per URL a figure of nothing: the
stage's URL count must be the corpus's own (webgen's manifest), on both corpora.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from benchmarks.bench_stage import one_pass, urlsets
from benchmarks.webgen import generate
from harvester.config import Config

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize("profile", ["many", "mixed"])
def test_a_pass_keeps_every_url_of_the_corpus(tmp_path: Path, profile: str) -> None:
    truth = generate(profile, tmp_path / profile, hosts=4, jobs=1)
    work = urlsets(tmp_path / profile)
    assert len(work) == 4
    urls, cpu = one_pass(work, Config())
    assert urls == truth.total_urls > 0
    assert cpu > 0
    assert urlsets(tmp_path / profile, limit=1) == work[:1]
