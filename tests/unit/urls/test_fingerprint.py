"""The URL fingerprint (harvester/urls/fingerprint.py): stable, 64-bit, pinned."""

from __future__ import annotations

from harvester.urls.fingerprint import fingerprint


def test_fingerprint_is_stable_64_bit() -> None:
    fp = fingerprint("https://example.com/")
    assert fp == fingerprint("https://example.com/")
    assert 0 <= fp < 2**64
    assert fp != fingerprint("https://example.com/a")
    assert fp == 0x14BA2EB79C27555B  # pinned: fingerprints may be persisted across runs
