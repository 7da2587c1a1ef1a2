"""The curated public surface: __all__ names are unique and importable."""

from __future__ import annotations

import importlib

import pytest

PUBLIC_MODULES = [
    "driveros",
    "driveros.acp",
    "driveros.agent",
    "driveros.council",
    "driveros.dogfood",
    "driveros.evals",
    "driveros.intel",
    "driveros.llm",
    "driveros.mcptools",
    "driveros.memory",
    "driveros.review",
    "driveros.sandbox",
    "driveros.state",
    "driveros.testing",
    "driveros.trust",
    "driveros_lsp",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_all_is_sorted_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), "duplicate names in __all__"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr} is in __all__ but missing"


def test_cli_usage_error_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    from driveros.cli._main import main

    assert main(["--no-such-flag"]) == 1
    assert "error" in capsys.readouterr().err
