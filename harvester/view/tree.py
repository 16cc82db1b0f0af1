"""The sitemap tree of one host: its report's ``sitemap_log`` → nested data and a rich tree.

In: a host report dict (``HostReport.as_dict()``) whose ``sitemap_log`` was kept
(``crawl/sitemaps.py``). Out: ``tree_data``, the hierarchy as nested JSON-ready
dicts (robots.txt → the sitemaps it lists → their children, each with its
counts and failure), and ``render_tree``, the same as a ``rich.tree.Tree`` for
a terminal. Pure: no I/O.

Everything shown comes from the web (URLs, messages), so every label is a
``rich.text.Text`` (never markup: a ``[bold]`` in a URL stays text) with its
control characters escaped (they could drive the terminal).

Usage::

    data = tree_data(report)
    Console().print(render_tree(data))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from rich.tree import Tree

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["human_bytes", "printable", "render_tree", "tree_data"]

# How the outcome of a sitemap is shown: its mark and style.
_OUTCOME_STYLE = {
    "ok": ("✓", "green"),
    "partial": ("!", "yellow"),
    "failed": ("✗", "red"),
    # Read, but nothing usable: an HTML page (or other non-sitemap) where a listed
    # sitemap should be (``ReadResult.status``); a fallback guess that is a page is
    # "missed" instead.
    "error": ("✗", "red"),
    "missed": ("·", "dim"),
    "not_modified": ("=", "cyan"),
    "refused": ("✗", "yellow"),
    "skipped": ("-", "dim"),
    "queued": ("?", "dim"),
}


def printable(text: str) -> str:
    """``text`` with control characters (ESC, newlines, bidi overrides) as ``\\xNN``."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def human_bytes(n: int) -> str:
    """``1536`` → ``1.5 KiB`` (bytes below 1 KiB as they are)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n:,} B" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{n:,} B"  # pragma: no cover - the loop always returns


def tree_data(report: Mapping[str, Any]) -> dict[str, Any]:
    """The host's sitemap hierarchy as nested dicts.

    Out: ``{"host", "discovery", "robots": {"url", "status"}, "urls", "bytes",
    "sitemaps_fetched", "sitemaps_failed", "failures": [host failures on no
    sitemap of the tree: robots.txt, discovery], "omitted", "sitemaps": [node,
    ...]}`` where each node is a ``sitemap_log`` node with ``"children": [...]``.
    A node whose parent is not in the log (a cap left it out) hangs at the top.
    """
    log: Mapping[str, Any] = report.get("sitemap_log") or {}
    nodes = [dict(node, children=[]) for node in log.get("sitemaps", ())]
    by_url = {node["url"]: node for node in nodes}
    top: list[dict[str, Any]] = []
    for node in nodes:
        parent = by_url.get(node["parent"]) if node["parent"] else None
        if parent is None or parent is node:
            top.append(node)
        else:
            parent["children"].append(node)
    listed = set(by_url)
    failures = [f for f in report.get("failures", ()) if f.get("url") not in listed]
    return {
        "host": report.get("host"),
        "discovery": report.get("discovery"),
        "robots": dict(log.get("robots") or {"url": None, "status": report.get("robots_status")}),
        "urls": report.get("urls", 0),
        "bytes": report.get("bytes", 0),
        "sitemaps_fetched": report.get("sitemaps_fetched", 0),
        "sitemaps_failed": report.get("sitemaps_failed", 0),
        "failures": failures,
        "omitted": log.get("omitted", 0),
        "sitemaps": top,
    }


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _label(node: Mapping[str, Any]) -> Text:
    mark, style = _OUTCOME_STYLE.get(node.get("outcome", ""), ("?", "dim"))
    text = Text()
    text.append(f"{mark} ", style=style)
    text.append(f"[{node.get('kind') or '?'}] ", style="bold")
    text.append(printable(node["url"]), style="dim" if style == "dim" else "")
    facts: list[str] = []
    read = node.get("kind") is not None or node.get("bytes")
    if node.get("outcome") in ("ok", "partial", "failed", "not_modified") and read:
        if node.get("kind") == "sitemapindex" or node.get("sitemaps"):
            facts.append(_count(int(node.get("sitemaps") or 0), "sitemap"))
        if node.get("kind") != "sitemapindex" or node.get("urls"):
            facts.append(_count(int(node.get("urls") or 0), "URL"))
        facts.append(human_bytes(int(node.get("bytes") or 0)))
        if node.get("gzip"):
            facts.append("gzip")
        if node.get("newest"):
            facts.append(f"newest {node['newest']}")
    elif node.get("outcome") in ("missed", "skipped", "refused"):
        facts.append(str(node.get("outcome")))
    if facts:
        text.append("  " + " · ".join(facts), style="cyan")
    if node.get("error"):
        status = f" {node['status']}" if node.get("status") else ""
        why = f"  {node['error']}{status}"
        if node.get("message"):
            why += f": {printable(str(node['message']))}"
        text.append(why, style="red" if node.get("outcome") != "skipped" else "dim")
    return text


def _add(branch: Tree, node: Mapping[str, Any]) -> None:
    sub = branch.add(_label(node))
    for child in node.get("children", ()):
        _add(sub, child)


def render_tree(data: Mapping[str, Any]) -> Tree:
    """``tree_data``'s hierarchy as a rich tree: robots.txt at the root, then the sitemaps."""
    robots = data.get("robots") or {}
    root_text = Text()
    root_text.append(printable(str(data.get("host"))), style="bold")
    if robots.get("url"):
        root_text.append(f"  robots.txt {printable(robots['url'])}")
    if robots.get("status") is not None:
        root_text.append(f" ({robots['status']})")
    summary = (
        f"  {_count(int(data.get('urls', 0)), 'URL')}"
        f" · {_count(int(data.get('sitemaps_fetched', 0)), 'sitemap')} read,"
        f" {data.get('sitemaps_failed', 0):,} failed · {human_bytes(int(data.get('bytes', 0)))}"
        f" · discovery {data.get('discovery') or '?'}"
    )
    root_text.append(summary, style="cyan")
    tree = Tree(root_text)
    for failure in data.get("failures", ()):
        text = Text(f"✗ {failure.get('class')}", style="red")
        text.append(
            f" {printable(str(failure.get('url')))}: {printable(failure.get('message', ''))}"
        )
        tree.add(text)
    for node in data.get("sitemaps", ()):
        _add(tree, node)
    if data.get("omitted"):
        tree.add(Text(f"… {data['omitted']:,} more sitemaps not kept", style="dim"))
    return tree
