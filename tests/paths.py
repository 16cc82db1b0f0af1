"""Where the tests' files are, whatever folder a test sits in.

``REPO``: the repository (pyproject.toml, config.example.toml); ``DATA``: tests/data
(the conformance corpus, hostile documents, gzip samples).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
