"""``driveros doctor``: what works on this machine and in this workspace, and how to fix the rest.

Read-only: it changes nothing, starts no model request and runs nothing the workspace names
(its ``.driveros.toml`` and ``.env`` are parsed at most, never executed). Every check is
``ok``, ``warning`` (something optional is unavailable) or ``missing`` (a default
``driveros agent`` run cannot work), with a one-line fix. Exit 0 when nothing is missing,
1 otherwise. Sections: scratch copies, sandbox tiers, provider, workspace, detected build,
state directory (docs/commands.md, "``driveros doctor``").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from driveros._errors import DriverosError
from driveros._git import run_git
from driveros.cli._doctor_build import build_section
from driveros.cli._doctor_conventions import conventions_section
from driveros.cli._doctor_provider import provider_section
from driveros.cli._fail import stderr_line, stdout_line
from driveros.config import switches

Status = Literal["ok", "warning", "missing"]
#: Seconds one probe (the Docker daemon, git) may take before it counts as failed.
PROBE_TIMEOUT_S = 5.0
_SECTIONS = ("scratch", "sandbox", "provider", "workspace", "build", "conventions", "state")


class Check(BaseModel):
    section: str
    name: str
    status: Status
    detail: str
    fix: str | None = None


class Report(BaseModel):
    ok: bool = True
    exit_code: int = 0
    error: str | None = None
    workspace: str
    checks: list[Check] = Field(default_factory=list)
    #: Per section, the facts the checks are made of (stable keys; docs/commands.md).
    facts: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def add(
        self, section: str, name: str, status: Status, detail: str, fix: str | None = None
    ) -> None:
        self.checks.append(Check(section=section, name=name, status=status, detail=detail, fix=fix))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace", type=Path, default=Path(), help="the workspace to check (default: .)"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="stdout: a human report (text) or one JSON object",
    )


async def run(args: argparse.Namespace) -> int:
    raw: Path = args.workspace
    workspace = await asyncio.to_thread(raw.absolute)
    report = Report(workspace=str(workspace))
    report.facts = {section: {} for section in _SECTIONS}
    if not await asyncio.to_thread(workspace.is_dir):
        exists = await asyncio.to_thread(workspace.exists)
        message = f"workspace {workspace} " + ("is not a directory" if exists else "does not exist")
        report.error = message
        report.add("workspace", "path", "missing", message, "pass an existing --workspace DIR")
    else:
        workspace = await asyncio.to_thread(workspace.resolve)
        report.workspace = str(workspace)
    is_dir = report.error is None
    git = await _workspace(report, workspace) if is_dir else {}
    git.setdefault("lower", None)
    await _scratch(report, git)
    await _sandbox(report, Path(report.workspace))
    if is_dir:
        report.facts["provider"] = await provider_section(
            report.add, workspace, trusted=git["trusted"]
        )
        report.facts["build"] = await build_section(report.add, workspace)
        report.facts["conventions"] = await conventions_section(
            report.add, workspace, trusted=git["trusted"]
        )
    await _state(report)
    report.ok = not any(c.status == "missing" for c in report.checks)
    report.exit_code = 0 if report.ok else 1
    if args.format == "json":
        stdout_line(json.dumps(report.model_dump(mode="json"), sort_keys=True))
    else:
        _print_text(report)
    if report.error:
        stderr_line(f"driveros doctor: {report.error}")
    return report.exit_code


def _print_text(report: Report) -> None:
    marks = {"ok": "ok  ", "warning": "warn", "missing": "MISS"}
    titles = {
        "scratch": "scratch copies",
        "sandbox": "sandbox tiers",
        "provider": "provider",
        "workspace": f"workspace {report.workspace}",
        "build": "detected build",
        "conventions": "instructions, commands, hooks, tracing",
        "state": "state directory",
    }
    lines: list[str] = []
    for section in _SECTIONS:
        checks = [c for c in report.checks if c.section == section]
        if not checks:
            continue
        lines.append(f"{titles[section]}:")
        for c in checks:
            lines.append(f"  [{marks[c.status]}] {c.name}: {c.detail}")
            if c.fix and c.status != "ok":
                lines.append(f"         fix: {c.fix}")
    missing = sum(1 for c in report.checks if c.status == "missing")
    warnings = sum(1 for c in report.checks if c.status == "warning")
    if missing:
        lines.append(f"{missing} missing, {warnings} warnings: a default run cannot start")
    else:
        lines.append(f"ready ({warnings} warnings)")
    stdout_line("\n".join(lines))


# -- workspace ---------------------------------------------------------------------------------


async def _git_probe(workspace: Path, *args: str) -> str | None:
    """stdout of a read-only git command in the workspace (hooks and programs pinned off by
    ``run_git``), or None when it fails or takes longer than the probe timeout."""
    try:
        result = await run_git(list(args), cwd=workspace, check=False, timeout=PROBE_TIMEOUT_S)
    except (DriverosError, OSError, TimeoutError):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.decode("utf-8", errors="backslashreplace").strip()


async def _workspace(report: Report, workspace: Path) -> dict[str, Any]:
    from driveros.intel import has_workspace_config, read_workspace_config
    from driveros.trust import TrustStore

    report.add("workspace", "path", "ok", str(workspace))
    top = await _git_probe(workspace, "rev-parse", "--show-toplevel")
    commit = (
        top is not None
        and (await _git_probe(workspace, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"))
        is not None
    )
    if top is None:
        report.add(
            "workspace",
            "git",
            "warning",
            "not a git repository: --review works on a full copy",
            f"git init {workspace} (and commit) for worktree scratch copies and clean diffs",
        )
    else:
        detail = f"git repository at {top}" + ("" if commit else " without a commit yet")
        report.add("workspace", "git", "ok" if commit else "warning", detail, "git commit")
    store_read = True
    try:
        entry = await asyncio.to_thread(lambda: TrustStore.default().covering(workspace))
    except (DriverosError, OSError) as exc:
        entry, store_read = None, False
        report.add("workspace", "trust", "warning", f"cannot read the trust store: {exc}")
    else:
        if entry is not None:
            report.add("workspace", "trust", "ok", f"trusted (through {entry.path})")
        else:
            report.add(
                "workspace",
                "trust",
                "ok",
                "not trusted: its .env, .driveros.toml and [tool.driveros] are ignored",
                f"driveros trust {workspace}",
            )
    trusted = entry is not None
    config_file = workspace / ".driveros.toml"
    exists = await asyncio.to_thread(config_file.is_file)
    config_state = "absent"
    if await asyncio.to_thread(has_workspace_config, workspace):
        if not trusted:
            config_state = "ignored"
            report.add(
                "workspace",
                "config",
                "warning",
                "workspace configuration present but ignored (untrusted workspace)",
                f"driveros trust {workspace} (after reading it)",
            )
        else:
            # Parsed only: a check it names is never run here.
            parsed = await asyncio.to_thread(read_workspace_config, workspace)
            if parsed.problem:
                config_state = "invalid"
                report.add("workspace", "config", "warning", f"{parsed.origin}: {parsed.problem}")
            else:
                config_state = "honoured"
                report.add("workspace", "config", "ok", f"{parsed.origin} is honoured (trusted)")
    elif exists:
        config_state = "ignored" if not trusted else "empty"
        report.add("workspace", "config", "ok", ".driveros.toml has no [diagnostics] settings")
    else:
        report.add("workspace", "config", "ok", "no .driveros.toml (defaults)")
    report.facts["workspace"] = {
        "path": str(workspace),
        "git": top is not None,
        "commit": commit,
        "trusted": trusted,
        "trusted_through": entry.path if entry is not None else None,
        "driveros_toml": exists,
        "config": config_state,
    }
    return {
        "repository": top is not None,
        "commit": commit,
        "lower": Path(top) if top is not None else workspace,
        # what the provider section reads the workspace's .env by (None: the store failed)
        "trusted": trusted if store_read else None,
    }


# -- scratch copies ----------------------------------------------------------------------------


async def _scratch(report: Report, git: dict[str, Any]) -> None:
    from driveros.review import STRATEGIES, STRATEGY_VAR, overlay_refusal, scratch_strategies

    strategies = await asyncio.to_thread(scratch_strategies)
    reasons: dict[str, str | None] = dict(strategies)
    view = next((k for k, why in strategies.items() if why is None and "overlay" in k), None)
    if view is not None and git["lower"] is not None:
        # What a run checks for this workspace: its file system, its .git, its path; the
        # scratch copies go under the temporary directory.
        lower: Path = git["lower"]
        root = Path(tempfile.gettempdir()) / "driveros-scratch-doctor"
        refusal = await asyncio.to_thread(
            overlay_refusal, lower, root, repository=bool(git["repository"])
        )
        if refusal is not None:
            reasons[view] = refusal
            view = None
    if not git.get("commit"):
        reasons["worktree"] = "the workspace is not a git repository with a commit"
    if view is not None:
        auto = view
    elif reasons["worktree"] is None:
        auto = "worktree"
    else:
        auto = "copy"
    asked = switches().scratch_strategy or "auto"
    if asked not in STRATEGIES:
        report.add(
            "scratch",
            STRATEGY_VAR,
            "warning",
            f"unknown value ignored (expected one of {', '.join(STRATEGIES)})",
            f"unset {STRATEGY_VAR}",
        )
        asked = "auto"
    preferred = True  # a strategy auto would have preferred to the one it picks
    for name, why in reasons.items():
        preferred = preferred and name != auto
        if why is None:
            report.add("scratch", name, "ok", "available")
            continue
        fix = None
        if name == "fuse-overlay":
            fix = "apt-get install fuse-overlayfs fuse3 (and access to /dev/fuse)"
        # The other view driver ("only when root") does not apply to this user.
        status: Status = "warning" if preferred and not why.startswith("only when") else "ok"
        report.add("scratch", name, status, f"not used: {why}", fix)
    chosen = auto if asked == "auto" else asked
    detail = f"auto picks {auto}"
    if asked != "auto":
        detail += f"; {STRATEGY_VAR}={asked} uses {asked}"
    report.add("scratch", "strategy", "ok", detail)
    report.facts["scratch"] = {
        "requested": asked,
        "auto": auto,
        "used": chosen,
        "strategies": reasons,
    }


# -- sandbox tiers -----------------------------------------------------------------------------


def _docker_info() -> tuple[dict[str, Any] | None, bool | None, str | None]:
    """(daemon info, whether the sandbox image exists, why the daemon cannot be used)."""
    try:
        import docker
        from docker.errors import DockerException, ImageNotFound
    except ImportError:
        return None, None, "the docker Python package is not installed"
    from driveros.sandbox import DEFAULT_IMAGE

    try:
        client = docker.from_env(timeout=int(PROBE_TIMEOUT_S))
    except DockerException as exc:
        return None, None, str(exc)
    try:
        client.ping()
        info: dict[str, Any] = client.api.info()
        try:
            client.api.inspect_image(DEFAULT_IMAGE)  # type: ignore[no-untyped-call]
            image = True
        except ImageNotFound:
            image = False
        return info, image, None
    except DockerException as exc:
        return None, None, str(exc)
    except OSError as exc:  # a socket timeout or a refused connection outside the SDK's tree
        return None, None, str(exc)
    finally:
        client.close()


async def _sandbox(report: Report, workspace: Path) -> None:
    from driveros.sandbox import DEFAULT_IMAGE, probe_local_sandbox

    path = os.environ.get("PATH")
    local = await asyncio.to_thread(lambda: probe_local_sandbox(path, exclude=[workspace]))
    detail, fix = (local.describe(), None) if local.ok else (local.cause, local.fix)
    report.add("sandbox", "local sandbox", "ok" if local.ok else "missing", detail, fix)
    started = time.monotonic()
    try:
        info, image, why = await asyncio.wait_for(
            asyncio.to_thread(_docker_info), PROBE_TIMEOUT_S * 3
        )
    except TimeoutError:
        info, image, why = None, None, f"no answer within {PROBE_TIMEOUT_S * 3:.0f} s"
    runtimes = sorted((info or {}).get("Runtimes") or {})
    facts: dict[str, Any] = {
        "docker": info is not None,
        "runtimes": runtimes,
        "image": DEFAULT_IMAGE,
        "image_present": image,
        "probe_ms": int((time.monotonic() - started) * 1000),
    }
    report.facts["sandbox"] = facts
    if info is None:
        report.add(
            "sandbox",
            "docker",
            "warning",
            f"the Docker daemon is not reachable ({why})",
            "start dockerd (or set DOCKER_HOST); --sandbox local works without it",
        )
        return
    report.add("sandbox", "docker", "ok", f"daemon reachable (Docker {info.get('ServerVersion')})")
    for runtime, fix in (
        ("runc", "reinstall Docker (runc is its default runtime)"),
        (
            "runsc",
            "apt-get install runsc; register it in /etc/docker/daemon.json and reload dockerd "
            "(docs/sandbox.md)",
        ),
    ):
        if runtime in runtimes:
            report.add("sandbox", runtime, "ok", "registered with the daemon")
        else:
            report.add("sandbox", runtime, "warning", "not registered with the daemon", fix)
    if image:
        report.add("sandbox", "image", "ok", f"{DEFAULT_IMAGE} is built")
    else:
        report.add(
            "sandbox", "image", "warning", f"{DEFAULT_IMAGE} is not built", "make sandbox-image"
        )


# -- state directory ---------------------------------------------------------------------------


def _writable(path: Path) -> tuple[bool, bool]:
    """(exists, writable): a missing directory counts as writable when its nearest existing
    parent is (driveros creates it at the first run)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return path.exists(), probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


async def _state(report: Report) -> None:
    from driveros.state import gc_reason, list_leases, state_dir

    where = state_dir()
    exists, writable = await asyncio.to_thread(_writable, where)
    if writable:
        report.add("state", "path", "ok", f"{where} ({'writable' if exists else 'created on use'})")
    else:
        report.add(
            "state",
            "path",
            "missing",
            f"{where} is not writable",
            f"chmod u+w {where}, or set DRIVEROS_STATE_DIR to a writable directory",
        )
    leftovers = 0
    if exists:
        try:
            leases = await list_leases(where)
        except OSError as exc:
            leases = []
            report.add("state", "leftovers", "warning", f"cannot list {where}: {exc}")
        now = time.time()
        leftovers = await asyncio.to_thread(
            lambda: sum(gc_reason(lease, now) is not None for lease in leases)
        )
    if leftovers:
        report.add(
            "state",
            "leftovers",
            "warning",
            f"{leftovers} left behind by ended processes",
            "driveros gc",
        )
    else:
        report.add("state", "leftovers", "ok", "nothing for driveros gc to remove")
    report.facts["state"] = {"path": str(where), "writable": writable, "leftovers": leftovers}
