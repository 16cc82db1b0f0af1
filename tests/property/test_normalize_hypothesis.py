"""harvester.urls.normalize properties: idempotence, fixed points, equivalent variants collapse.

URLs are built from parts (host labels, path segments, query pairs, fragment)
so that each rule's variants can be generated from one canonical original:
case, default port, IDNA, dot segments, percent-encoding, parameter order,
tracking/session parameters, fragments and empty queries.
"""

from __future__ import annotations

from hypothesis import assume, example, given
from hypothesis import strategies as st

from harvester.config import NormalizeRules
from harvester.urls.normalize import _FAST, Rules, canonical
from tests.strategies import ANY_URL, KEY, TRACKING, urls


@given(ANY_URL | urls())
@example("https://e.com/a/%2e%2e")
@example("https://e.com/%25%32%65")
@example("https://e.com/?%75tm_source=1")
@example("http://E.com:80")
def test_idempotent(url: str) -> None:
    once = canonical(url)
    assert canonical(once) == once


@given(urls())
def test_canonical_form_is_a_fixed_point_and_fast(url: str) -> None:
    canon = canonical(url)
    assert canonical(canon) == canon
    if "%" not in canon and "/." not in canon:
        assert _FAST(canon) is not None  # typical canonical URLs take the fast path


@given(ANY_URL | urls(), st.booleans())
def test_fast_path_equals_slow_path(url: str, strip: bool) -> None:
    rules = Rules(NormalizeRules(strip_trailing_slash=strip))
    canon = rules.canonical(url)
    assert rules._general(url) == canon
    assert rules._general(canon) == rules.canonical(canon) == canon


@given(urls(), st.data())
def test_equivalent_variants_collapse(url: str, data: st.DataObject) -> None:
    canon = canonical(url)
    scheme, _, rest = canon.partition("://")
    host, _slash, tail = rest.partition("/")
    path, _, query = tail.partition("?")
    name, _, port = host.partition(":")
    default = ":443" if scheme == "https" else ":80"
    variants = [
        f"{scheme.upper()}://{host.upper()}/{tail}",  # scheme and host case
        f"{scheme}://{name}{(port and ':' + port) or default}/{tail}",  # default port
        f"{scheme}://{name}./{tail}" if not port else canon,  # trailing dot
        f"{scheme}://{host}/./x/../{tail}",  # dot segments
        f"{scheme}://{host}/{path.replace('-', '%2d').replace('~', '%7e')}"
        + (f"?{query}" if query else ""),  # unreserved percent-encoded
        canon + "#section",  # fragment
        canon + ("&" if query else "?") + data.draw(TRACKING) + "=1",  # tracking/session
        canon if query else canon + "?",  # empty query
        f"{scheme}://{host}/{path}?" + "&".join(reversed(query.split("&"))) if query else canon,
    ]
    for variant in variants[:-1]:
        assert canonical(variant) == canon, variant
    # reversed order collapses only when keys are distinct (repeated keys keep their order)
    keys = [p.partition("=")[0] for p in query.split("&")] if query else []
    if len(set(keys)) == len(keys):
        assert canonical(variants[-1]) == canon


@given(urls(), KEY, st.text("abc123", min_size=1, max_size=4), st.text("abc/05", max_size=10))
def test_content_params_and_hashbang_routes_preserved(
    url: str, key: str, value: str, route: str
) -> None:
    canon = canonical(url)
    sep = "&" if "?" in canon else "?"
    with_param = canonical(f"{canon}{sep}{key}={value}")
    assert with_param != canon
    assert f"{key}={value}" in with_param.split("?", 1)[1].split("&")
    with_route = canonical(f"{canon}#!/{route}")
    assert with_route == f"{canon}#!/{route}"
    assume(route)
    assert canonical(f"{canon}#!/{route}x") != with_route
