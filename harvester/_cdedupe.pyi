"""Types of the compiled fingerprint (harvester/_cdedupe.pyx)."""

def fingerprint(url: str) -> int:
    """``int.from_bytes(blake2b(url.encode(), digest_size=8).digest(), "big")``."""
