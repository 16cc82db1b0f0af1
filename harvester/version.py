"""The package's version: one place, on the ground floor.

In: nothing. Out: ``__version__``, which ``harvester/__init__.py`` exports, the build
reads (pyproject.toml) and ``config.FetchConfig``'s default User-Agent names. Its own
module so that the config can name it without importing the package's public face,
which imports the config.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
