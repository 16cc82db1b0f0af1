"""The package's version: one place, on the ground floor.

In: nothing. Out: ``__version__``, ``DISTRIBUTION`` (the name on the package
index) and ``install_hint``; which ``harvester/__init__.py`` exports, the build
reads (pyproject.toml) and ``config.FetchConfig``'s default User-Agent names. Its own
module so that the config can name it without importing the package's public face,
which imports the config.
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "__version__", "install_hint"]

__version__ = "0.1.0"

# The name on the package index (pyproject.toml's ``name``). ``harvester`` there is
# another project (a scraping library), and so is ``sitemap-harvester``; the import
# package and the command stay ``harvester``. Every message naming an extra says it
# through install_hint, so a user never installs someone else's code.
DISTRIBUTION = "harvester-sitemaps"


def install_hint(extra: str) -> str:
    """The pip command that installs optional extra ``extra``: ``pip install "NAME[extra]"``."""
    return f'pip install "{DISTRIBUTION}[{extra}]"'
