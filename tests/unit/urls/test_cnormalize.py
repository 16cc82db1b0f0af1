"""The compiled check (harvester/urls/_cnormalize.pyx) says yes exactly where the fast regex does.

``already_canonical(loc, strip)`` must be True precisely for the query-less URLs
that ``Rules.canonical``'s fast regex and its checks return untouched: a False
where the regex says yes only costs speed, but a True where it says no would
skip a rule, so both directions are checked, on hand-made cases and generated
URLs (including the property tests' URL builders).
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harvester.config import NormalizeRules
from harvester.urls import normalize
from harvester.urls.normalize import Rules
from tests.compiled import compiled_module
from tests.strategies import ANY_URL, urls

cnormalize = compiled_module("_cnormalize")


def test_the_normalizer_uses_the_compiled_one() -> None:
    # What these tests compare with the Python path is what Rules.canonical calls.
    assert normalize._canonical_query is cnormalize.canonical_query


RULES = {strip: Rules(NormalizeRules(strip_trailing_slash=strip)) for strip in (False, True)}


def regex_says(loc: str, strip: bool) -> bool:
    """What ``Rules.canonical``'s fast route decides for a URL without a query."""
    rules = RULES[strip]
    m = rules._fast(loc)
    if m is None:
        return False
    scheme, port, path, query = m.groups()
    return (
        query is None
        and "?" not in loc
        and (port is None or port != (":80" if scheme == "http" else ":443"))
        and "/." not in path
        and not (strip and path.endswith("/") and len(path) > 1)
    )


def check(loc: str) -> None:
    for strip in (False, True):
        fast = cnormalize.already_canonical(loc, strip)
        assert fast == regex_says(loc, strip), (loc, strip)
        if fast:
            assert RULES[strip]._general(loc) == loc, (loc, strip)


@pytest.mark.parametrize(
    "loc",
    [
        "https://example.com/",
        "http://127.1.3.210:8765/articles/new-arrivals/case-830157.html",
        "https://a-b.c0.example/x/y-z_~!$&'()*+,=:@/",
        "https://example.com/a/",
        "https://example.com:8443/a",
    ],
)
def test_canonical_urls_without_a_query_say_yes(loc: str) -> None:
    assert cnormalize.already_canonical(loc, False)
    check(loc)


@pytest.mark.parametrize(
    "loc",
    [
        "https://example.com",  # no path
        "HTTPS://example.com/",
        "https://Example.com/",
        "https://example.com:443/",
        "http://example.com:80/",
        "https://example.com:0443/",
        "https://example.com:123456/",
        "https://example.com:/",
        "https://example..com/",
        "https://.example.com/",
        "https://example.com./",
        "https://example.com/a/./b",
        "https://example.com/a/../b",
        "https://example.com/.hidden",
        "https://example.com/a%20b",
        "https://example.com/a b",
        "https://example.com/a;jsessionid=1",
        "https://example.com/ä",
        "https://example.com/a?b=1",
        "https://example.com/a#top",
        "https://user@example.com/",
        "https://[::1]/",
        "ftp://example.com/",
        "https:/example.com/",
        "https://exa_mple.com/",
        " https://example.com/",
        "https://example.com/\n",
    ],
)
def test_everything_else_says_no(loc: str) -> None:
    assert not cnormalize.already_canonical(loc, False)
    check(loc)


def test_strip_trailing_slash_says_no_to_a_trailing_slash() -> None:
    assert not cnormalize.already_canonical("https://example.com/a/", True)
    assert cnormalize.already_canonical("https://example.com/", True)  # the root stays


URL_CHARS = "hHtTpPsS:/.a-z0Z9_~!$&'()*+,=@%;?#[] \n\täé"


@settings(max_examples=3000, deadline=None)
@given(
    ANY_URL
    | urls()
    | st.text(URL_CHARS, max_size=30).map(lambda s: "https://" + s)
    | st.text(URL_CHARS, max_size=30).map(lambda s: "http://example.com" + s)
    | st.text(URL_CHARS, max_size=40)
)
@example("http://e.com:65536/")
@example("http://e.com:99999/")
@example("https://e.com:80/")
@example("http://e.com:443/")
def test_generated_urls_agree_with_the_regex(loc: str) -> None:
    check(loc)


# -- canonical_query: the canonical form of URLs with a plain query --------------------------

QUERY_RULES = [
    Rules(NormalizeRules()),
    Rules(NormalizeRules(strip_trailing_slash=True)),
    Rules(NormalizeRules(sort_query=False)),
    Rules(NormalizeRules(tracking_params=("ref*", "gclid"), session_params=("sid",))),
    Rules(NormalizeRules(tracking_params=(), session_params=())),
]


def check_query(loc: str) -> None:
    """The compiled answer is None (the Python path decides) or the general route's."""
    for rules in QUERY_RULES:
        out = cnormalize.canonical_query(
            loc, rules._strip_slash, rules._drop, rules._drop_prefixes, rules._sort
        )
        if out is not None:
            assert out == rules._general(loc), (loc, rules._sort, rules._drop)
            assert rules.canonical(out) == out  # idempotent


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        ("https://e.com/a", "https://e.com/a"),
        ("https://e.com/a?b=1", "https://e.com/a?b=1"),
        ("https://e.com/p?variant=5&color=red", "https://e.com/p?color=red&variant=5"),
        ("https://e.com/p/?b&a=1=2&a", "https://e.com/p/?a=1=2&a&b"),  # stable for equal keys
        ("https://e.com/p?ab=1&a=2", "https://e.com/p?a=2&ab=1"),  # a prefix sorts first
        ("https://e.com/p?B=1&a=2", "https://e.com/p?B=1&a=2"),  # upper case first
        ("https://e.com/p?x=/?:@!$'()*+,;", "https://e.com/p?x=/?:@!$'()*+,;"),
    ],
)
def test_plain_queries_are_decided_in_c(loc: str, expected: str) -> None:
    rules = QUERY_RULES[0]
    assert (
        cnormalize.canonical_query(loc, False, rules._drop, rules._drop_prefixes, True) == expected
    )
    check_query(loc)


@pytest.mark.parametrize(
    "loc",
    [
        "https://e.com/p?utm_source=x&id=1",  # a tracking key is dropped
        "https://e.com/p?UTM_Medium=x",
        "https://e.com/p?jsessionid=1",
        "https://e.com/p?",  # an empty query
        "https://e.com/p?a=1&",
        "https://e.com/p?a=1&&b=2",
        "https://e.com/p?=1",
        "https://e.com/p?a=%41",  # percent-encoding
        "https://e.com/p?a=é",
        "https://e.com/p?a=1 2",
        "https://e.com/p?a=1#top",
        "https://e.com/p?a=1&b=[x]",
        "https://E.com/p?a=1",  # the part before the query is not canonical
        "https://e.com/./p?a=1",
        "https://e.com:443/p?a=1",
        "https://e.com/p?" + "&".join(f"k{i}" for i in range(40)),  # too many pairs
    ],
)
def test_everything_else_is_left_to_python(loc: str) -> None:
    rules = QUERY_RULES[0]
    assert cnormalize.canonical_query(loc, False, rules._drop, rules._drop_prefixes, True) is None
    check_query(loc)


def test_strip_trailing_slash_applies_before_the_query() -> None:
    assert cnormalize.canonical_query("https://e.com/a/?b=1", True, frozenset(), (), True) is None
    assert cnormalize.canonical_query("https://e.com/?b=1", True, frozenset(), (), True) == (
        "https://e.com/?b=1"
    )


QUERY_KEYS = st.sampled_from(
    ["a", "b", "B", "ab", "a1", "z", "", "utm_source", "UTM_x", "ref", "referrer", "gclid", "sid"]
)
QUERY_VALUE = st.text("aZ09=-._~!$'()*+,;:@/?%é #&[", max_size=6)


@st.composite
def query_urls(draw: st.DrawFn) -> str:
    base = draw(st.sampled_from(["https://e.com/p", "http://e.com:8080/a/", "https://e.com/"]))
    pairs = draw(
        st.lists(
            st.tuples(QUERY_KEYS, st.sampled_from(["", "="]), QUERY_VALUE).map("".join),
            max_size=6,
        )
    )
    sep = draw(st.sampled_from(["&", "&", "&&"]))
    return base + "?" + sep.join(pairs) + draw(st.sampled_from(["", "", "&", "#f"]))


@settings(max_examples=3000, deadline=None)
@given(query_urls() | ANY_URL | urls() | st.text(URL_CHARS, max_size=40))
def test_generated_urls_agree_with_the_general_route(loc: str) -> None:
    check_query(loc)
