"""Issue 27: a run's options reach the local tier's sandbox (``--network``, the hidden user's
tree under a view, the state directory) and its approval tier."""

from __future__ import annotations

from pathlib import Path

from driveros.config import load_environment
from driveros.runs import RunSpec, run_tier
from driveros.runs._sandbox import local_mounts, make_sandbox
from driveros.sandbox import LocalSandbox
from driveros.state import state_dir


def test_network_reaches_the_local_sandbox_and_its_tier(tmp_path: Path) -> None:
    env = load_environment(cwd=tmp_path, environ={"PATH": "/usr/bin:/bin"})
    for network in (False, True):
        spec = RunSpec(task="t", workspace=tmp_path, network=network, review=True)
        box, seen_as = make_sandbox(spec, tmp_path, env)
        assert isinstance(box, LocalSandbox) and seen_as == str(tmp_path)
        assert box.network is network and box.contained is not network
        tier = run_tier(spec)
        assert tier.network is network and tier.contained is not network
    # on the user's own tree (no --review) nothing is contained: no review gate
    assert not run_tier(RunSpec(task="t", workspace=tmp_path)).contained


def test_a_run_never_mounts_the_state_directory(tmp_path: Path) -> None:
    env = load_environment(cwd=tmp_path, environ={"DRIVEROS_STATE_DIR": str(tmp_path / "st")})
    read_only, hidden = local_mounts(RunSpec(task="t", workspace=tmp_path), env, None)
    state = state_dir(env.process_env)
    assert hidden == [state]
    # only the language servers driveros installed are added, never the state directory
    for path in read_only:
        assert not path.is_relative_to(state) and not state.is_relative_to(path), path
