"""Config section ``[policy]``: what the site allows (issue 48).

In: keyword values (the dataclass defaults are the only defaults; ``loader`` fills
them from TOML and the ``--respect-robots``/``--robots-agent``/``--no-tdmrep``
flags). Out: the frozen ``PolicyConfig`` that ``harvester.crawl.verdicts`` and
``harvester.crawl.allow`` read, validated in ``__post_init__``.
"""

from __future__ import annotations

from dataclasses import dataclass

from harvester.config.checks import check_section

__all__ = ["PolicyConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyConfig:
    """Per-URL robots.txt verdicts and per-host AI/TDM signals."""

    # The product token the verdicts are for ("" : the run's own, fetch.user_agent's).
    user_agent: str = ""
    # Each record gets "robots": allowed | disallowed | unknown.
    verdicts: bool = True
    # Drop the URLs robots.txt disallows for user_agent (counted robots_disallowed_urls).
    respect_robots: bool = False
    # The host report's signals: AI crawler groups, Content-Signal lines of robots.txt.
    signals: bool = True
    # One request per host for /.well-known/tdmrep.json (W3C TDMRep): after robots.txt,
    # one attempt, under the host's politeness; remembered in the state file with the
    # discovery memory (crawl/tdmrep.py). --no-tdmrep turns it off.
    tdmrep: bool = True

    def __post_init__(self) -> None:
        check_section(self, "policy")
