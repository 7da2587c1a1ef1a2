"""Fault tests that make scratch copies run once per scratch strategy available here."""

from __future__ import annotations

import pytest

from driveros.review import STRATEGY_VAR
from tests.review._repo import available_strategies

#: Modules whose guarantees (nothing left behind after signals and crashes, gc, big files,
#: restarts) must hold for every strategy: each test runs per strategy, and the CLI and
#: server subprocesses inherit ``$DRIVEROS_SCRATCH_STRATEGY``.
_EVERY_STRATEGY = frozenset(
    {
        "test_big_files",
        "test_cli_exit",
        "test_concurrent_scratch",
        "test_server_exit",
        "test_server_restart",
        "test_server_shutdown",
    }
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if module in _EVERY_STRATEGY and "scratch_strategy" in metafunc.fixturenames:
        metafunc.parametrize("scratch_strategy", available_strategies(), indirect=True)


@pytest.fixture(autouse=True)
def scratch_strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The strategy this test runs with (``auto`` outside the modules above)."""
    name = str(getattr(request, "param", "auto"))
    monkeypatch.setenv(STRATEGY_VAR, name)
    return name
