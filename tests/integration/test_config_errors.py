"""Bad config as a user meets it (issue 50, item 6): `harvester run` in a subprocess.

Each kind of bad value (a flag's ``nan``, a file that is not UTF-8, a scalar where a
section belongs) once crashed a worker or the loader with a traceback and exit 1.
Each must be a usage error: exit 2, one line on stderr naming the key, and no request
sent (the run is refused before any host starts).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.integration.harvesting import run_cli
from tests.integration.webs import urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites


async def a_site(sites: Sites) -> Site:
    """A healthy host: a run that got going would ask it for robots.txt."""
    routes: dict[str, bytes] = {}
    site = await sites.start("127.0.0.150", routes)
    routes["/sitemap.xml"] = urlset(site.url("/a"))
    return site


def assert_refused(code: int, err: str, key: str, site: Site, out: Path) -> None:
    """Exit 2, one stderr line naming ``key``, nothing fetched, no output."""
    assert code == 2, err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert err.startswith(f"harvester: config: {key}: "), err
    assert site.log == []
    assert not out.exists()
    assert not Path(f"{out}.part").exists()


@pytest.mark.parametrize(
    ("flag", "value", "key"),
    [
        ("--rate", "nan", "politeness.default.rate"),
        ("--rate", "inf", "politeness.default.rate"),
        ("--timeout", "nan", "fetch.total_timeout"),
        ("--host-timeout", "nan", "limits.max_host_seconds"),
    ],
)
async def test_a_flag_that_is_not_a_finite_number_is_a_usage_error(
    sites: Sites, tmp_path: Path, flag: str, value: str, key: str
) -> None:
    site = await a_site(sites)
    out = tmp_path / "o.jsonl"
    code, _, err = await run_cli(
        "--allow-private", "--no-state", "-o", str(out), flag, value, site.origin
    )
    assert_refused(code, err, key, site, out)


async def test_a_config_file_that_is_not_utf8_is_a_usage_error(
    sites: Sites, tmp_path: Path
) -> None:
    site = await a_site(sites)
    config = tmp_path / "c.toml"
    config.write_bytes(b'[fetch]\nuser_agent = "bot\xff\xfe"\n')  # Latin-1 bytes, say
    out = tmp_path / "o.jsonl"
    code, _, err = await run_cli(
        "--config", str(config), "--allow-private", "--no-state", "-o", str(out), site.origin
    )
    assert_refused(code, err, "fetch.user_agent", site, out)
    assert "line 2" in err


async def test_a_scalar_where_a_section_belongs_is_a_usage_error(
    sites: Sites, tmp_path: Path
) -> None:
    site = await a_site(sites)
    config = tmp_path / "c.toml"
    config.write_text("fetch = 3\n")
    out = tmp_path / "o.jsonl"
    # --allow-private sets fetch.allow_private on top of the file's `fetch`
    code, _, err = await run_cli(
        "--config", str(config), "--allow-private", "--no-state", "-o", str(out), site.origin
    )
    assert_refused(code, err, "fetch", site, out)
