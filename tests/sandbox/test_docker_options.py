"""``DockerSandbox`` takes its settings as one frozen ``DockerSandboxOptions`` or as keywords
(building one starts nothing: no daemon is needed here)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import get_type_hints

import pytest

from driveros.sandbox import DockerSandbox, DockerSandboxOptions, PolicyError
from driveros.sandbox._docker_options import DockerSandboxFields


def test_docker_options_keywords_are_the_fields() -> None:
    fields = {f.name: f.type for f in dataclasses.fields(DockerSandboxOptions)}
    keywords = get_type_hints(DockerSandboxFields)
    assert keywords == get_type_hints(DockerSandboxOptions)  # the same names, the same types
    assert set(keywords) == set(fields)


def test_docker_options_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DockerSandboxOptions().network = True  # type: ignore[misc]


async def test_docker_options_keywords_replace_the_given_options(tmp_path: Path) -> None:
    given = DockerSandboxOptions(network=True, runtime="runc", memory="1g", user="1234:1234")
    box = DockerSandbox(tmp_path, given, untrusted=True, memory="3g")
    try:
        assert box.options == dataclasses.replace(given, untrusted=True, memory="3g")
        assert (box.runtime, box.untrusted, box.network) == ("runsc", True, True)
        assert (box.memory, box.user, box.image) == ("3g", "1234:1234", "driveros-sandbox:latest")
        plain = DockerSandbox(tmp_path)
        assert plain.options == DockerSandboxOptions()
        owner = tmp_path.stat()
        # the workspace owner, never root (a root-owned one runs as distroless' "nonroot")
        expected = "65532:65532" if owner.st_uid == 0 else f"{owner.st_uid}:{owner.st_gid}"
        assert (plain.runtime, plain.user) == ("runc", expected)
    finally:
        await box.aclose()


def test_docker_options_never_root(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="root"):
        DockerSandbox(tmp_path, DockerSandboxOptions(user="0:0"))
