"""Flags shared by verbs: the fetch and politeness flags every verb that fetches takes.

In: an argparse parser. Out: its arguments, each with ``dest`` the dotted config key
it overrides (``overrides`` collects the ones the user set for ``load_config``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

__all__ = ["fetch_arguments", "overrides", "typed_flags"]

_METAVARS = {int: "N", float: "NUM", str: "TEXT"}

# (flag, config key, type, help) of every verb that fetches (run, audit).
_FETCH_FLAGS: list[tuple[str, str, type, str]] = [
    ("--user-agent", "fetch.user_agent", str, "User-Agent header"),
    ("--proxy", "fetch.proxy", str, "HTTP proxy URL"),
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
        "--allow-private",
        dest="fetch.allow_private",
        action="store_const",
        const=True,
        help="allow private and loopback addresses (config: fetch.allow_private)",
    )


def overrides(ns: argparse.Namespace) -> dict[str, object]:
    """Flags whose dest is a dotted config key and that the user actually set."""
    return {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in vars(ns).items()
        if "." in k and v is not None
    }
