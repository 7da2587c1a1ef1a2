"""``python -m bench.bench_intel --corpus`` runs each corpus project's own test command on the
host, uncontained (the baseline): that third-party code never sees the user's secrets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import bench_intel


def test_corpus_env_withholds_keys_from_the_host_baseline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planted = {
        "OPENAI_API_KEY": "sk-bench-planted-0123456789",
        "ANTHROPIC_API_KEY": "sk-ant-bench-planted",
        "GITHUB_TOKEN": "ghp_benchplanted0123456789",
        "AWS_SECRET_ACCESS_KEY": "bench-planted-aws",
    }
    for name, value in planted.items():
        monkeypatch.setenv(name, value)

    env = bench_intel.corpus_env()

    assert {name: env[name] for name in planted if name in env} == {}
    assert not set(planted.values()) & set(env.values())
    # still the tools' environment: this venv's bin first on PATH
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
