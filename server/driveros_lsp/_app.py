"""``create_server()``: a server with every feature module wired onto it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from driveros_lsp import _workspace_diagnostics
from driveros_lsp._server import DriverosLanguageServer
from driveros_lsp.features import (
    code_actions,
    commands,
    configuration,
    documents,
    inline,
    iterate,
    lifecycle,
    memory,
)

if TYPE_CHECKING:
    from driveros_lsp._server import RunnerFactory


def create_server(*, runner_factory: RunnerFactory | None = None) -> DriverosLanguageServer:
    """A new, fully wired server. ``runner_factory`` replaces the agent (tests, benchmarks)."""
    server = DriverosLanguageServer(runner_factory=runner_factory)
    for setup in (
        lifecycle.setup,
        configuration.setup,
        documents.setup,
        code_actions.setup,
        commands.setup,
        iterate.setup,
        memory.setup,
        inline.setup,
        _workspace_diagnostics.setup,
    ):
        setup(server)
    return server
