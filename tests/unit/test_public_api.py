"""The public API in harvester/__init__.py is complete, sorted and importable."""

from __future__ import annotations

import harvester


def test_all_is_sorted_and_importable() -> None:
    names = [n for n in harvester.__all__ if n != "__version__"]
    assert names == sorted(names, key=str.lower) or names == sorted(names)
    for name in harvester.__all__:
        assert hasattr(harvester, name), name


def test_main_entry_points_are_exported() -> None:
    for name in ("harvest", "load_config", "Config", "SitemapReader", "HarvesterError"):
        assert name in harvester.__all__
