"""Types of the compiled canonical-form check (harvester/_cnormalize.pyx)."""

def already_canonical(loc: str, strip_slash: bool) -> bool:
    """True: ``loc`` is a query-less http(s) URL in canonical form (return it as it is)."""
