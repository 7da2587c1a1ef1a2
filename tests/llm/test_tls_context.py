"""Every provider's HTTP client verifies with one TLS context per CA-bundle environment: made
per client it loaded the bundle each time (20-25 ms on every run's first request)."""

from __future__ import annotations

import ssl

import certifi
import pytest

from driveros.llm import openaicompat
from driveros.llm._http import _ssl_context


def test_one_context_for_every_client_of_an_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE"):
        monkeypatch.delenv(name, raising=False)
    first = _ssl_context()
    assert _ssl_context() is first
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    # Another CA bundle named: another context, made from it (as httpx itself would).
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    other = _ssl_context()
    assert other is not first and _ssl_context() is other
    assert other.cert_store_stats()["x509_ca"] > 0  # the named bundle was loaded


async def test_providers_share_it() -> None:
    a = openaicompat.openai("m", api_key="k", base_url="http://127.0.0.1:9/v1")
    b = openaicompat.openai("m", api_key="k", base_url="http://127.0.0.1:9/v1")
    clients = [a._new_client(), b._new_client()]
    try:
        contexts = {id(c._transport._pool._ssl_context) for c in clients}  # type: ignore[attr-defined]
        assert contexts == {id(_ssl_context())}
    finally:
        for c in clients:
            await c.aclose()
