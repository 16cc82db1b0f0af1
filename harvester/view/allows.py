"""What the site allows, for the ``tree`` view: a host report's ``allows`` → a rich tree branch.

In: a host report dict (``HostReport.as_dict()``) with its ``allows`` block
(``crawl/allow.py``) and its verdict counts. Out: ``allows_branch``, a
``rich.tree.Tree`` to add under the host's tree (None when the host said
nothing), one line per signal with its source (robots.txt line, tdmrep.json URL, the
first response that carried a header).
Pure: no I/O. Like ``tree.py``, every label is ``rich.text.Text`` with control
characters escaped: the values come from the web.

Usage (where the ``tree`` view builds a host's tree)::

    branch = allows_branch(report)
    if branch is not None:
        tree.add(branch)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from rich.tree import Tree

from harvester.view.tree import printable

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["allows_branch", "allows_lines"]


def allows_lines(report: Mapping[str, Any]) -> list[str]:
    """One plain line per signal of ``report`` (empty: none), in a fixed order."""
    allows: Mapping[str, Any] = report.get("allows") or {}
    lines = []
    for token, crawler in (allows.get("ai_crawlers") or {}).items():
        where = ", ".join(map(str, crawler["lines"])) or "-"
        lines.append(
            f"{token}: disallowed {crawler['disallowed']}"
            f" (group {crawler['group'] or 'none'}, robots.txt lines {where})"
        )
    for signal in allows.get("content_signals") or ():
        agents = ", ".join(signal["agents"])
        lines.append(
            f"Content-Signal {signal['value']} (User-agent {agents}, line {signal['line']})"
        )
    tdm: Mapping[str, Any] | None = allows.get("tdmrep")
    if tdm is not None and (tdm.get("rules") or tdm.get("error")):
        if tdm.get("error"):
            lines.append(f"TDMRep unreadable: {tdm['error']} ({tdm['url']})")
        for rule in tdm.get("rules") or ():
            policy = f", policy {rule['tdm-policy']}" if rule.get("tdm-policy") else ""
            lines.append(
                f"TDMRep {rule['location']}: reservation {rule['tdm-reservation']}{policy}"
                f" ({tdm['url']})"
            )
    if tdm is not None and tdm.get("skipped"):
        lines.append(f"TDMRep not asked: {tdm['skipped']} ({tdm['url']})")
    for seen in allows.get("headers") or ():  # issue 48: tdm-*, X-Robots-Tag (tdmheaders.py)
        times = f", {seen['responses']} responses" if seen["responses"] > 1 else ""
        lines.append(f"header {seen['header']}: {seen['value']} ({seen['url']}{times})")
    if report.get("robots_disallowed_urls"):
        lines.append(f"{report['robots_disallowed_urls']} URLs dropped by --respect-robots")
    if report.get("robots_unknown"):
        lines.append(f"robots.txt verdicts unknown: {report['robots_unknown']}")
    return lines


def allows_branch(report: Mapping[str, Any]) -> Tree | None:
    """``allows_lines`` as a tree branch titled "what the site allows" (None: no line)."""
    lines = allows_lines(report)
    if not lines:
        return None
    branch = Tree(Text("what the site allows", style="bold"))
    for line in lines:
        branch.add(Text(printable(line)))
    return branch
