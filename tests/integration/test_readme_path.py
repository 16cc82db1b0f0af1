"""The README's user path, as written there: its run command on a domain list, then its
pandas and DuckDB snippets on the output (a loopback site; ``--allow-private`` added, as
the README says for one's own network). Plus: its links lead somewhere."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tests.integration.webs import site_with_tree

if TYPE_CHECKING:
    from tests.integration.conftest import Sites

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def path_section() -> str:
    start = README.index("## A user's path")
    return README[start : README.index("\n## ", start + 1)]


def block_after(text: str, first_line: str) -> str:
    """The indented code block whose first line starts with ``first_line``, dedented."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("    " + first_line))
    block = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block).strip()


async def test_the_readme_path_ends_in_pandas_and_duckdb(sites: Sites, tmp_path: Path) -> None:
    site = await site_with_tree(sites, "127.0.0.81")
    section = path_section()
    command = shlex.split(block_after(section, "harvester run -i domains.txt"))
    assert command[:2] == ["harvester", "run"]
    (tmp_path / "domains.txt").write_text(f"# my sites\n{site.origin}\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        *command[1:],
        "--allow-private",
        "--retries",
        "0",
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    _, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    named = re.findall(r"`(out/[\w.]+)`", section)
    assert named  # the files step 2 names are there
    for name in named:
        assert (tmp_path / name).exists(), name
    # Step 4, as written: pandas then DuckDB, in the run's directory.
    snippet = block_after(section, "import pandas as pd")
    scope: dict[str, object] = {}
    out = io.StringIO()
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(snippet, "README.md", "exec"), scope)
    finally:
        os.chdir(cwd)
    urls = scope["urls"]
    assert len(urls) == 3  # type: ignore[arg-type]
    assert str(urls["lastmod"].dtype) == "datetime64[us, UTC]"  # type: ignore[index]
    assert "127.0.0.81" in out.getvalue()  # DuckDB's table, shown


def test_readme_links_lead_somewhere_and_every_docs_page_is_linked() -> None:
    links = set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README))
    missing = sorted(link for link in links if "://" not in link and not (ROOT / link).exists())
    assert missing == []
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages - links == set()
    assert {"docs/usage.md", "docs/how-it-works.md", "docs/benchmarks.md"} <= links


def test_readme_keeps_the_test_and_main_job_commands() -> None:
    assert "\n    make test\n" in README
    assert "\n    make demo\n" in README
    makefile = (ROOT / "Makefile").read_text()
    assert "\ntest:" in makefile
    assert "\ndemo:" in makefile
