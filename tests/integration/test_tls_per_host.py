"""``verify_tls = false`` per host only, loudly reported (issue 32), with a throwaway CA.

Two https hosts on 127.0.31.x with certificates of a CA nobody trusts: the one whose
``[politeness.hosts."HOST:PORT"]`` says ``verify_tls = false`` is harvested (its report
says ``tls_unverified``), the other fails the handshake as before.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import pytest
import trustme
from aiohttp import web

from harvester.cli import main
from tests.integration.harvesting import collect
from tests.integration.webs import urlset

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

HOSTS = ("127.0.31.5", "127.0.31.6")


@pytest.fixture
async def https_hosts() -> AsyncIterator[list[tuple[str, int]]]:
    ca = trustme.CA()
    runners: list[web.AppRunner] = []
    found: list[tuple[str, int]] = []
    try:
        for host in HOSTS:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ca.issue_cert(host).configure_cert(context)

            async def handle(request: web.Request) -> web.Response:
                base = f"https://{request.host}"
                return web.Response(body=urlset(f"{base}/a", f"{base}/b"))

            app = web.Application()
            app.router.add_get("/{tail:.*}", handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            runners.append(runner)
            site = web.TCPSite(runner, host, 0, ssl_context=context)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            found.append((host, port))
        yield found
    finally:
        for runner in runners:
            await runner.cleanup()


async def test_verify_tls_false_is_per_host_and_reported(
    https_hosts: list[tuple[str, int]],
) -> None:
    (lax, lax_port), (strict, strict_port) = https_hosts
    records, hosts = await collect(
        [f"https://{lax}:{lax_port}/s.xml", f"https://{strict}:{strict_port}/s.xml"],
        **{
            "fetch.allow": ("127.0.31.0/24",),
            "politeness.hosts": {f"{lax}:{lax_port}": {"verify_tls": False}},
        },
    )
    assert sorted(r["loc"] for r in records) == [
        f"https://{lax}:{lax_port}/a",
        f"https://{lax}:{lax_port}/b",
    ]
    assert hosts[f"{lax}:{lax_port}"]["tls_unverified"] is True
    assert hosts[f"{lax}:{lax_port}"]["failures"] == []
    report = hosts[f"{strict}:{strict_port}"]
    assert report["tls_unverified"] is False
    assert report["urls"] == 0
    assert "certificate verify failed" in report["failures"][0]["message"]


def test_the_cli_warns_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[politeness.hosts."intranet.example"]\nverify_tls = false\n')
    assert main(["run", "--config", str(path)]) == 2  # no hosts given: refused after the warning
    err = capsys.readouterr().err
    assert "WARNING: TLS certificates of intranet.example are NOT verified" in err
