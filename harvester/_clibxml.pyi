"""Types of lxml's libxml2 looked up for _cpush (harvester/_clibxml.pyx)."""

MISSING: str | None
