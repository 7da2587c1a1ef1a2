"""Shared test configuration: paths to ../shared fixtures and skip helpers."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import Phase, settings

# No example database in the checkout, and no "explain" phase: explaining a failure re-parses
# the test's source with `ast`, which CPython 3.11 (before 3.11.8, gh-106905) can turn into a
# spurious "AST constructor recursion depth mismatch" SystemError while other threads compile.
# Failures are still shrunk and reported with their falsifying example.
settings.register_profile(
    "driveros",
    database=None,
    phases=tuple(p for p in Phase if p is not Phase.explain),
)
settings.load_profile("driveros")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
LLM_FIXTURES = SHARED / "fixtures" / "llm"


@pytest.fixture
def llm_fixtures() -> Path:
    """The recorded provider traffic in ../shared/fixtures/llm (skips when absent)."""
    if not LLM_FIXTURES.is_dir():
        pytest.skip(f"recorded LLM fixtures not found at {LLM_FIXTURES} (../shared is absent)")
    return LLM_FIXTURES


@pytest.fixture(scope="session", autouse=True)
def _private_dirs_for_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Private state, config and XDG state directories before any fixture of a wider scope
    starts a process (a module's language server, a sandbox): nothing a test starts ever
    reads or writes the real ``~/.local/state/driveros`` or ``~/.config/driveros``, nor
    collects another test's leftovers there. Each test then gets its own (below)."""
    with pytest.MonkeyPatch.context() as mp:
        for var, name in (
            ("DRIVEROS_STATE_DIR", "session-state"),
            ("XDG_CONFIG_HOME", "session-xdg-config"),
            ("XDG_STATE_HOME", "session-xdg-state"),
        ):
            mp.setenv(var, str(tmp_path_factory.mktemp(name)))
        yield


@pytest.fixture(autouse=True)
def _private_state_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own driveros state directory (leases, locks), never ~/.local."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("DRIVEROS_STATE_DIR", str(state))
    return state


@pytest.fixture(autouse=True)
def _isolated_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own empty user config directory (trust store, provider settings):
    the developer's own ``~/.config/driveros`` never leaks into a test, nor a test into it."""
    config = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return config


@pytest.fixture(autouse=True)
def _no_mount_left_in_tmp_path(request: pytest.FixtureRequest) -> Iterator[None]:
    """Unmount the overlay scratch views a test left: below its ``tmp_path`` (a test that
    failed half-way; pytest could not remove the directory) and of its repositories wherever
    they are (a proposal kept past a server's exit, whose state directory is gone with the
    test, so no garbage collection would ever find it)."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    from driveros.state import mounts_under

    tmp = request.getfixturevalue("tmp_path")
    yield
    from tests.review._repo import views_of

    for point in [*mounts_under(tmp), *views_of(tmp, below=True)]:
        subprocess.run(["umount", "-l", "--", point], check=False, capture_output=True)


#: Test modules whose guarantees must hold for every scratch strategy (changes, diffs, apply,
#: conflicts, kept copies, environments; nothing left behind after signals, crashes and gc;
#: big files; restarts): each of their tests runs once per strategy available on this
#: machine, and the CLI and server subprocesses inherit ``$DRIVEROS_SCRATCH_STRATEGY``.
_EVERY_STRATEGY = frozenset(
    {
        "tests.review.test_actions",
        "tests.review.test_buffers",
        "tests.review.test_changes",
        "tests.review.test_diff_patch",
        "tests.review.test_kept",
        "tests.review.test_scratch",
        "tests.review.test_environments",
        "tests.faults.test_big_files",
        "tests.faults.test_cli_exit",
        "tests.faults.test_concurrent_scratch",
        "tests.faults.test_server_exit",
        "tests.faults.test_server_restart",
        "tests.faults.test_server_shutdown",
    }
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__ in _EVERY_STRATEGY and "scratch_strategy" in metafunc.fixturenames:
        from tests.review._repo import available_strategies

        metafunc.parametrize("scratch_strategy", available_strategies(), indirect=True)


@pytest.fixture(autouse=True)
def scratch_strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The scratch strategy this test runs with (``$DRIVEROS_SCRATCH_STRATEGY``): ``auto``,
    which is ``overlay`` where the machine can mount one, unless the module is above."""
    name = str(getattr(request, "param", "auto"))
    monkeypatch.setenv("DRIVEROS_SCRATCH_STRATEGY", name)
    return name
