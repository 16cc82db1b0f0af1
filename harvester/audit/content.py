"""Lastmod audit, part 2: did a page's main text change between audits? (issue 7)

Pure. In: a page's parsed HTML tree (``pagedates.extract_signals`` parses it)
or a list of words. Out: the main text (``main_text``) or its words
(``main_words``), a 64-bit simhash of the words over 3-word shingles
(``simhash``, the ``PageSignals.fingerprint``), and for two fingerprints of the
same page from different audits their Hamming ``distance`` and whether the
content changed (``content_changed``).

Its own module: whether the content changed is a question apart from the dates
a page states (``pagedates.py``); the trust score's recall and precision
(``trust.py``) rest on it. The hash is fixed across processes because
fingerprints kept in state files are compared with new ones.

Example::

    words = main_words(root)              # strips root's boilerplate in place
    fingerprint = simhash(words) if words else None
    changed = content_changed(old_fingerprint, fingerprint)   # None: a side has no text
"""

from __future__ import annotations

import copy
import hashlib
import re

from lxml import etree

__all__ = [
    "CHANGED_THRESHOLD",
    "MAX_FINGERPRINT_WORDS",
    "content_changed",
    "distance",
    "main_text",
    "main_words",
    "simhash",
]

# Words fed to the fingerprint: bounds its cost on endless pages;
# a long read has 10,000.
MAX_FINGERPRINT_WORDS = 20_000
SHINGLE_WORDS = 3
# Fingerprints further apart than this many bits (of 64) mean the content
# changed. Replacing a fraction f of the shingles moves a 64-bit simhash by
# about (64/pi) * arccos(1 - f) bits (Charikar), give or take 2. On 30
# 480-word test articles (tests/unit/audit/test_content.py): one word changed
# (f = 0.6 %) moved 0-6 bits, one paragraph in eight 4-16, two in eight 9-23.
# So "changed" means roughly 5 % of the main text or more: a typo fix is not a
# change, a rewritten paragraph nearly always is, a rewritten quarter always.
# (Manku et al.'s 3 bits is a near-duplicate bound for whole web pages; on one
# article's text a single word already moves 2-3 bits on average.)
CHANGED_THRESHOLD = 6
# Elements that are not the page's main text; their content changes with
# every deploy or visit (menus, widgets, comment forms, tracking code).
_BOILERPLATE = (
    "script",
    "style",
    "noscript",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "template",
    "svg",
    "iframe",
)
_WORD = re.compile(r"\w+")
# Every number reads as "0": view counters, comment counts and "3 hours ago"
# change on every fetch and must not count as a content change.
_DIGITS = re.compile(r"\d+")


def main_text(root: etree._Element) -> str:
    """Return the page's main text: boilerplate elements dropped, whitespace and case folded.

    Works on a copy; ``main_words`` strips the tree it is given (``extract_signals``' own).
    """
    return _strip_to_main_text(copy.deepcopy(root))


def main_words(root: etree._Element) -> list[str]:
    """Return the words of the page's main text, every number read as "0": ``simhash``'s input.

    Strips the boilerplate from ``root`` itself, unlike ``main_text``.
    """
    return _WORD.findall(_DIGITS.sub("0", _strip_to_main_text(root)))


def _strip_to_main_text(root: etree._Element) -> str:
    # Removes boilerplate from the tree in place: strip_elements and itertext
    # run in C, ten times faster than walking a large page in Python.
    body = root.find(".//body")
    scope = body if body is not None else root
    etree.strip_elements(
        scope, *_BOILERPLATE, etree.Comment, etree.ProcessingInstruction, with_tail=False
    )
    return " ".join(" ".join(scope.itertext()).split()).lower()


def _shingle_hash(shingle: str) -> int:
    # blake2b, not hash(): str hashes are salted per process, and fingerprints
    # are compared across runs.
    return int.from_bytes(hashlib.blake2b(shingle.encode(), digest_size=8).digest(), "big")


def simhash(words: list[str], shingle: int = SHINGLE_WORDS) -> int:
    """Return the 64-bit simhash of a word list over ``shingle``-word shingles.

    Each bit is the majority vote of that bit over all shingle hashes. A small
    edit changes a few shingles and so moves few votes across the middle.
    """
    if len(words) <= shingle:
        shingles = [" ".join(words)]
    else:
        shingles = [" ".join(words[i : i + shingle]) for i in range(len(words) - shingle + 1)]
    # Bit votes by column counting over a string of '0'/'1' digits: the slices
    # and counts run in C, far faster than 64 Python additions per shingle.
    bits = "".join(format(_shingle_hash(s), "064b") for s in shingles)
    half = len(shingles) / 2
    out = 0
    for i in range(64):
        if bits[i::64].count("1") > half:
            out |= 1 << (63 - i)
    return out


def distance(a: int, b: int) -> int:
    """Return the Hamming distance between two fingerprints (0-64 bits)."""
    return (a ^ b).bit_count()


def content_changed(old: int | None, new: int | None) -> bool | None:
    """Tell whether the main text changed: distance above ``CHANGED_THRESHOLD``.

    None when either side has no fingerprint (no text: nothing to compare).
    """
    if old is None or new is None:
        return None
    return distance(old, new) > CHANGED_THRESHOLD
