"""harvester.audit.content: the main text, its simhash, and what counts as a change."""

from __future__ import annotations

import random

from lxml import etree

from harvester.audit.content import (
    CHANGED_THRESHOLD,
    content_changed,
    distance,
    main_text,
    simhash,
)
from harvester.audit.pagedates import extract_signals
from tests.unit.audit.samples import WORDPRESS


def test_wordpress_main_text_drops_boilerplate() -> None:
    root = etree.fromstring(WORDPRESS, etree.HTMLParser())
    text = main_text(root)
    assert text.startswith("council approves transport budget the city council voted")
    assert "residents said buses were often late & crowded." in text
    for boilerplate in ("home", "popular", "other story", "city news", "datalayer"):
        assert boilerplate not in text
    assert root.find(".//nav") is not None  # main_text works on a copy


TEXT = (
    "the city council voted on tuesday to approve a new budget for public transport after "
    "months of debate residents said buses were often late and crowded while officials "
    "promised more frequent service on main routes the plan includes new electric vehicles "
    "cycle lanes and repairs to stations which critics called overdue mayor said funding "
    "would come from regional grants and a small increase in parking fees opposition members "
    "argued that the costs were underestimated and asked for an independent review"
)
VOCAB = TEXT.split()


def paragraphs(seed: int, n: int = 8, words: int = 60) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCAB) for _ in range(words)) for _ in range(n)]


def article_page(paras: list[str], *, views: int = 1234, nav: str = "Home News Sport") -> bytes:
    body = "".join(f"<p>{p}.</p>" for p in paras)
    return (
        f"<html><body><nav>{nav}</nav><article><h1>Council approves budget</h1>{body}"
        f"<p>{views} views, {views // 100} comments</p></article>"
        f"<script>track({views})</script><footer>{nav}</footer></body></html>"
    ).encode()


def fp(page: bytes) -> int:
    f = extract_signals(page).fingerprint
    assert f is not None
    return f


SEEDS = range(30)


def test_counters_and_boilerplate_do_not_change_the_fingerprint() -> None:
    for seed in SEEDS:
        paras = paragraphs(seed)
        base = fp(article_page(paras))
        assert fp(article_page(paras, views=98_765)) == base
        assert fp(article_page(paras, nav="Home World Weather Login")) == base
        shouted = [p.upper().replace(" ", "  \n ") for p in paras]
        assert fp(article_page(shouted)) == base


def test_a_one_word_edit_is_not_a_content_change() -> None:
    for seed in SEEDS:
        paras = paragraphs(seed)
        edited = list(paras)
        words = edited[2].split()
        words[10] = "zebra"
        edited[2] = " ".join(words)
        assert not content_changed(fp(article_page(paras)), fp(article_page(edited))), seed


def test_real_edits_are_content_changes() -> None:
    changed_one = 0
    for seed in SEEDS:
        paras, other = paragraphs(seed), paragraphs(seed + 100)
        base = fp(article_page(paras))
        # A quarter of the text rewritten: always a change.
        assert content_changed(base, fp(article_page(paras[:3] + other[3:5] + paras[5:]))), seed
        # An eighth (one paragraph of eight): nearly always.
        changed_one += bool(
            content_changed(base, fp(article_page(paras[:3] + other[3:4] + paras[4:])))
        )
        # A different article entirely: far apart.
        assert distance(base, fp(article_page(other))) > 3 * CHANGED_THRESHOLD
    assert changed_one >= 0.8 * len(SEEDS)


def test_fingerprint_is_stable_across_processes() -> None:
    # blake2b-based, not hash(): the value is fixed, so runs can be compared.
    # Pinned: a change here invalidates every fingerprint kept in state files.
    assert simhash(["hello", "world", "again", "and", "again"]) == 0xECAC308A4D80BD83
    assert extract_signals(b"<p>Hello world</p>").fingerprint == simhash(["hello", "world"])


def test_distance_and_content_changed_helpers() -> None:
    assert distance(0, 0) == 0
    assert distance(0, (1 << 64) - 1) == 64
    assert content_changed(0, 0b111111) is False  # 6 bits: at the threshold
    assert content_changed(0, 0b1111111) is True
    assert content_changed(None, 5) is None
    assert extract_signals(b"<script>only code</script>").fingerprint is None
