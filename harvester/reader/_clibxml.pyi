"""Types of lxml's libxml2 looked up for _cpush (harvester/reader/_clibxml.pyx)."""

MISSING: str | None
