"""Helpers for run tests: the agent tests' fixture repository and scripted-model runner."""

from __future__ import annotations

from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests
from tests.agent.conftest import SECRET, Outcome, environ_for, run_scripted, sandbox_env

__all__ = ["SECRET", "Outcome", "environ_for", "run_scripted", "sandbox_env"]
