"""Flags shared by verbs: the fetch and politeness flags every verb that fetches takes.

In: an argparse parser. Out: its arguments, each with ``dest`` the dotted config key
it overrides (``overrides`` collects the ones the user set for ``load_config``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from harvester.crawl.headers import parse_header

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["fetch_arguments", "filter_arguments", "overrides", "policy_arguments", "typed_flags"]

_METAVARS = {int: "N", float: "NUM", str: "TEXT"}

# (flag, config key, type, help) of every verb that fetches (run, audit).
_FETCH_FLAGS: list[tuple[str, str, type, str]] = [
    ("--user-agent", "fetch.user_agent", str, "User-Agent header"),
    ("--proxy", "fetch.proxy", str, "proxy URL: http://, socks5:// or socks5h://"),
    ("--connections", "fetch.max_connections", int, "open connections per worker"),
    ("--timeout", "fetch.total_timeout", float, "seconds per file, retries included"),
    ("--retries", "fetch.retries", int, "retries on connection errors, 5xx and 429"),
    ("--rate", "politeness.default.rate", float, "requests per second per host"),
    ("--concurrency", "politeness.default.concurrency", int, "requests at once per host"),
]


def typed_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flags: list[tuple[str, str, type, str]],
) -> None:
    """Add ``(flag, config key, type, help)`` flags, the key named in each help text."""
    for flag, dest, typ, text in flags:
        parser.add_argument(
            flag, dest=dest, type=typ, metavar=_METAVARS[typ], help=f"{text} (config: {dest})"
        )


def fetch_arguments(parser: argparse.ArgumentParser) -> None:
    """The fetch flags, ``--allow`` and ``--allow-private``, for every verb that fetches."""
    typed_flags(parser, _FETCH_FLAGS)
    parser.add_argument(
        "--allow",
        dest="fetch.allow",
        action="append",
        metavar="NET_OR_HOST",
        help="a network (CIDR) or host name the SSRF guard lets through although private;"
        " repeatable (config: fetch.allow)",
    )
    parser.add_argument(
        "--header",
        dest="fetch.headers",
        action=_HeaderAction,
        metavar="'NAME: VALUE'",
        help="a header sent with every request; repeatable, adds to the config's"
        " (config: fetch.headers; per host: politeness.hosts.NAME.headers)",
    )
    parser.add_argument(
        "--allow-private",
        dest="fetch.allow_private",
        action="store_const",
        const=True,
        help="allow private and loopback addresses (config: fetch.allow_private)",
    )


class _HeaderAction(argparse.Action):
    """``--header "Name: value"``, repeatable: collected into one dict (a config table)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        try:
            name, value = parse_header(str(values))
        except ValueError as exc:
            parser.error(f"{option_string}: {exc}")
        headers = dict(getattr(namespace, self.dest, None) or {})
        headers[name] = value
        setattr(namespace, self.dest, headers)


def filter_arguments(parser: argparse.ArgumentParser) -> None:
    """``run``'s URL filters: --include/--exclude (page locs), --follow/--skip-sitemap."""
    group = parser.add_argument_group("choosing what to harvest (regular expressions, re.search)")
    for flag, key, text in (
        ("--include", "filters.include", "write only page URLs matching one of these"),
        ("--exclude", "filters.exclude", "do not write page URLs matching any of these"),
        ("--follow", "filters.follow", "download only index children matching one of these"),
        ("--skip-sitemap", "filters.skip_sitemap", "do not download index children matching"),
    ):
        group.add_argument(
            flag,
            dest=key,
            action="append",
            metavar="REGEX",
            help=f"{text}; repeatable (config: {key})",
        )
    policy_arguments(parser)  # issue 48: run's [policy] flags, beside its filters
    revisit_arguments(parser)  # issue 53: adaptive revisit


# -- issue 48: what the site allows (config [policy]) ---------------------------------------
def policy_arguments(parser: argparse.ArgumentParser) -> None:
    """``run``'s ``[policy]`` flags: --respect-robots, --(no-)verdicts, --no-tdmrep,
    --robots-agent."""
    group = parser.add_argument_group("what the site allows (docs/what-the-site-allows.md)")
    for flag, key, value, text in (
        ("--respect-robots", "policy.respect_robots", True, "drop the URLs robots.txt disallows"),
        (
            "--verdicts",
            "policy.verdicts",
            True,
            'each record gets "robots": allowed|disallowed|unknown (the default)',
        ),
        ("--no-verdicts", "policy.verdicts", False, 'no "robots" field on the records'),
        ("--no-tdmrep", "policy.tdmrep", False, "do not request /.well-known/tdmrep.json"),
    ):
        group.add_argument(
            flag, dest=key, action="store_const", const=value, help=f"{text} (config: {key})"
        )
    group.add_argument(
        "--robots-agent",
        dest="policy.user_agent",
        metavar="TOKEN",
        help="the product token verdicts are for (default: the User-Agent's)"
        " (config: policy.user_agent)",
    )


# -- issue 53: adaptive revisit (config state.revisit) ------------------------------------
def revisit_arguments(parser: argparse.ArgumentParser) -> None:
    """``run``'s ``--revisit due|all`` (docs/cron.md)."""
    parser.add_argument(
        "--revisit",
        dest="state.revisit",
        choices=("due", "all"),
        help="with a state file: ask only the sitemaps whose revisit is due (default; an"
        " unchanged sitemap waits longer each time, at most state.max_revisit_interval),"
        " or all of them (config: state.revisit)",
    )


def crawl_arguments(parser: argparse.ArgumentParser) -> None:
    """``fetch_arguments``, and issue 49's flags: the sitemap probes' budget, the links
    fallback and the coverage check (crawl/probes.py, crawl/links.py, crawl/cover.py),
    for ``run``."""
    fetch_arguments(parser)
    typed_flags(
        parser.add_argument_group("where robots.txt lists no sitemap"),
        [
            (
                "--probe-budget",
                "discovery.probe_budget",
                int,
                "requests per host probing the usual sitemap locations (default 6)",
            ),
            (
                "--links-fallback",
                "discovery.links_fallback",
                int,
                "no sitemap found: walk up to N pages of same-site links (default 0: off)",
            ),
        ],
    )
    typed_flags(
        parser.add_argument_group("sitemap coverage (docs/coverage.md)"),
        [
            (
                "--coverage",
                "discovery.coverage",
                int,
                "per host: walk up to N pages of same-site links and sample N listed URLs;"
                " completeness and listed-but-not-live shares in the host report (default 0: off)",
            )
        ],
    )


def overrides(ns: argparse.Namespace) -> dict[str, object]:
    """Flags whose dest is a dotted config key and that the user actually set."""
    return {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in vars(ns).items()
        if "." in k and v is not None
    }
