"""The public surface of driveros.llm stays curated and light to import."""

from __future__ import annotations

import subprocess
import sys

import driveros.llm as llm


def test_llm_all_is_sorted() -> None:
    assert list(llm.__all__) == sorted(llm.__all__)


def test_llm_import_does_not_load_http_or_adapters() -> None:
    probe = (
        "import sys, driveros.llm; "
        "print(sorted(m for m in ('httpx', 'driveros.llm.openaicompat', 'driveros.llm.anthropic')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
