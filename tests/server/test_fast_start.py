"""Nothing beyond what ``initialize`` needs is imported before it is answered: building the
server loads neither pydantic (settings, payload models, diagnostics models) nor the run hub,
the run manager or the inline completion service; they load on first use.
bench/bench_lsp.py --start-only measures spawn -> initialize against a bare pygls server."""

from __future__ import annotations

from tests.server.test_imports import python_output

#: Modules (and packages, with their submodules) that initialize does not need.
NOT_BEFORE_INITIALIZE = (
    "pydantic",
    "driveros.diagnostics._item",
    "driveros.llm",
    "driveros.runs",
    "driveros_lsp._hub",
    "driveros_lsp._runs",
    "driveros_lsp._settings",
    "driveros_lsp.inline",
    "driveros_lsp.protocol_models",
)


def test_building_the_server_imports_nothing_initialize_does_not_need() -> None:
    script = (
        "import sys\n"
        # what driveros_lsp.__main__ imports before it serves stdio
        "from driveros.stdio import claim_stdio\n"
        "from driveros_lsp._app import create_server\n"
        "from driveros_lsp._serve import run_process, serve_stdio\n"
        "from driveros_lsp._tcp import serve_tcp\n"
        "create_server()\n"
        f"banned = {NOT_BEFORE_INITIALIZE!r}\n"
        "print(sorted(m for m in sys.modules if any(m == b or m.startswith(b + '.')"
        " for b in banned)))\n"
    )
    assert python_output(script) == "[]"


def test_the_lazy_parts_load_on_first_use() -> None:
    script = (
        "import sys\n"
        "from driveros_lsp._app import create_server\n"
        "server = create_server()\n"
        "server.hub, server.runs, server.settings\n"
        "print(all(m in sys.modules for m in"
        " ('driveros_lsp._hub', 'driveros_lsp._runs', 'driveros_lsp._settings')))\n"
        "print(server.runs is server.runs and server.hub is server.hub)\n"
    )
    assert python_output(script) == "True\nTrue"
