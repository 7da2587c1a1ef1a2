"""``LocalSandbox`` takes its settings as one frozen ``LocalSandboxOptions`` or as keywords."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox
from driveros.sandbox._local_options import LocalSandboxFields, LocalSandboxOptions


def test_local_options_keywords_are_the_fields() -> None:
    fields = {f.name for f in dataclasses.fields(LocalSandboxOptions)}
    assert set(LocalSandboxFields.__annotations__) == fields


def test_local_options_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        LocalSandboxOptions().network = True  # type: ignore[misc]


async def test_local_options_keywords_replace_the_given_options(tmp_path: Path) -> None:
    given = LocalSandboxOptions(network=True, output_cap=10, shell="/bin/bash")
    box = LocalSandbox(tmp_path, given, output_cap=20)
    try:
        assert box.options == dataclasses.replace(given, output_cap=20)
        assert (box.network, box.output_cap, box.shell) == (True, 20, "/bin/bash")
        assert LocalSandbox(tmp_path).options == LocalSandboxOptions()
    finally:
        await box.aclose()
