"""`python -m harvester`: the same entry point as the `harvester` console script."""

from __future__ import annotations

from harvester.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
