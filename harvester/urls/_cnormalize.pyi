"""Types of the compiled canonical-form checks (harvester/urls/_cnormalize.pyx)."""

def already_canonical(loc: str, strip_slash: bool) -> bool:
    """True: ``loc`` is a query-less http(s) URL in canonical form (return it as it is)."""

def canonical_query(
    loc: str, strip_slash: bool, drop: frozenset[str], prefixes: tuple[str, ...], sort: bool
) -> str | None:
    """The canonical form of ``loc`` when the compiled rules decide it, else None."""
