"""Run a suite's cases as Ray tasks (``driveros eval run … --executor ray``).

Each case is one Ray task that runs :class:`CaseRunner` on whichever worker Ray picks, with
that worker's sandbox backend. Nothing on a worker depends on the driver's paths: the suite
(its YAML as data, its workspaces and cassettes, and a ``git bundle`` of every local git
workspace) travels once through the object store; the task returns the case's result, its
event log and, when recording, its cassette, which the driver writes where a local run
would. Provider keys reach workers only through the job's runtime environment, never in task
arguments.

A task that Ray loses (a worker killed, a node gone) is an infrastructure failure: retried up
to ``options.retries`` times and reported apart from model failures, as locally.
"""

from __future__ import annotations

import asyncio
import io
import logging
import tarfile
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from driveros._atomic import write_atomic
from driveros._errors import ConfigError
from driveros._git import run_git_sync
from driveros._safe_open import anchor
from driveros._tmp import temp_root
from driveros.config import KEY_VARS, MODEL_VARS, URL_VARS, Environment
from driveros.evals._results import CaseResult
from driveros.evals._runner import CaseRunner, EvalOptions, run_bounded
from driveros.evals._suite import Case, GitWorkspace, Suite

log = logging.getLogger(__name__)

#: What ``pip install`` needs to make ``--executor ray`` work.
RAY_EXTRA = "driveros[ray]"
_BUNDLES = "_driveros_git"


class _Job(BaseModel):
    """One case's work, as it travels to a worker (no secrets, no driver paths)."""

    model_config = ConfigDict(frozen=True)

    suite: dict[str, Any]
    case_id: str
    options: dict[str, Any]


class _Outcome(BaseModel):
    """What a worker sends back for one case."""

    model_config = ConfigDict(frozen=True)

    result: CaseResult
    events: str = ""
    cassette: str | None = None


def import_ray() -> Any:
    """The ``ray`` module, or a setup error that names the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            f"--executor ray needs Ray: pip install '{RAY_EXTRA}' (or pip install ray)"
        ) from exc
    return ray


def pack_suite(suite: Suite) -> tuple[dict[str, Any], bytes]:
    """The suite as data (root-relative, local git workspaces rewritten to bundles) and a
    tar.gz of its directory with those bundles added."""
    data = suite.model_dump(mode="json", exclude={"root"})
    buf = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="driveros-ray-pack-", dir=temp_root()) as tmp:
        bundles = Path(tmp)
        for index, case in enumerate(suite.cases):
            if not isinstance(case.workspace, GitWorkspace):
                continue
            local = suite.root / case.workspace.git
            if not local.exists():
                continue  # a URL: the worker clones it itself
            bundle = bundles / f"{case.id}.bundle"
            run_git_sync(["bundle", "create", str(bundle), "--all"], cwd=local)
            data["cases"][index]["workspace"]["git"] = f"{_BUNDLES}/{bundle.name}"
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(suite.root, arcname="suite", filter=_skip_caches)
            if any(bundles.iterdir()):
                tar.add(bundles, arcname=f"suite/{_BUNDLES}")
    return data, buf.getvalue()


def _skip_caches(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    name = Path(info.name).name
    if name in ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"):
        return None
    return info


def _unpack_suite(data: Mapping[str, Any], archive: bytes, dest: Path) -> Suite:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")
    return Suite.model_validate({**data, "root": (dest / "suite").resolve()})


def run_case_on_worker(job_json: str, archive: bytes) -> str:
    """The Ray task body: unpack the suite, run one case, return an :class:`_Outcome`."""
    from driveros.config import load_environment
    from driveros.harden import not_dumpable

    not_dumpable()  # the worker holds the keys the job's runtime env carries

    job = _Job.model_validate_json(job_json)
    with tempfile.TemporaryDirectory(prefix="driveros-ray-case-", dir=temp_root()) as tmp:
        root = Path(tmp)
        suite = _unpack_suite(job.suite, archive, root)
        options = EvalOptions.model_validate({**job.options, "output_dir": root / "out"})
        # The worker's own environment (keys arrive through the job's runtime env); the
        # temporary directory holds no .env, so nothing of Ray's working directory is read.
        env = load_environment(cwd=root)
        case = suite.case(job.case_id)
        result = asyncio.run(CaseRunner(suite, options, env=env).run(case))
        events = ""
        if result.events_file:
            events_path = Path(result.events_file)
            if events_path.is_file():
                events = events_path.read_text(encoding="utf-8")
        cassette = None
        recorded = suite.cassette_path(case)
        if options.mode == "record" and recorded.is_file():
            cassette = recorded.read_text(encoding="utf-8")
    return _Outcome(result=result, events=events, cassette=cassette).model_dump_json()


class RayExecutor:
    """Cases as Ray tasks, at most ``concurrency`` in flight.

    ``address``: None starts a local cluster for this run, ``"auto"`` connects to the running
    one (``RAY_ADDRESS`` or the one ``ray start`` left), anything else is a cluster address.
    ``env_vars`` (provider keys, models, endpoints) go into the job's runtime environment.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        concurrency: int = 2,
        env_vars: Mapping[str, str] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigError("concurrency must be at least 1")
        self.address = address
        self.concurrency = concurrency
        self._env_vars = dict(env_vars or {})
        self._ray = import_ray()

    def _connect(self) -> bool:
        """Connect (or start a local cluster); True when this call did the connecting."""
        ray = self._ray
        if ray.is_initialized():
            return False
        ray.init(
            address=self.address or "local",
            runtime_env={"env_vars": self._env_vars} if self._env_vars else None,
            log_to_driver=False,
            include_dashboard=False if self.address is None else None,
            configure_logging=False,
        )
        return True

    async def run(
        self,
        cases: Sequence[Case],
        runner: CaseRunner,
        on_done: Callable[[CaseResult], Awaitable[None]],
    ) -> list[CaseResult]:
        ray = self._ray
        if not cases:
            return []
        try:
            connected = await asyncio.to_thread(self._connect)
        except Exception as exc:  # Ray raises plain exceptions for a cluster it cannot reach
            raise ConfigError(f"cannot reach the Ray cluster: {exc}") from exc
        try:
            data, archive = await asyncio.to_thread(pack_suite, runner.suite)
            archive_ref = ray.put(archive)
            task = ray.remote(num_cpus=1, max_retries=0)(run_case_on_worker)
            options = runner.options.model_dump(mode="json", exclude={"output_dir"})

            async def work(case: Case) -> CaseResult:
                job = _Job(suite=data, case_id=case.id, options=options).model_dump_json()
                return await self._with_retries(task, job, archive_ref, runner, case)

            return await run_bounded(cases, work, on_done, limit=self.concurrency)
        finally:
            if connected:
                await asyncio.to_thread(ray.shutdown)

    async def _with_retries(
        self, task: Any, job: str, archive_ref: Any, runner: CaseRunner, case: Case
    ) -> CaseResult:
        ray = self._ray
        lost = 0
        while True:
            try:
                raw = await task.remote(job, archive_ref)
            except ray.exceptions.RayError as exc:
                lost += 1
                reason = f"ray: {type(exc).__name__}: {_first_line(exc)}"
                log.warning("case %s: Ray task lost (attempt %d): %s", case.id, lost, reason)
                if lost > runner.options.retries:
                    return CaseResult(
                        suite=runner.suite.name,
                        case_id=case.id,
                        outcome="setup_error",
                        passed=False,
                        attempts=lost,
                        infra_error=reason,
                    )
                continue
            outcome = _Outcome.model_validate_json(raw)
            return await asyncio.to_thread(_land, outcome, runner, case, lost)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else ""


def _land(outcome: _Outcome, runner: CaseRunner, case: Case, lost: int) -> CaseResult:
    """Write the worker's event log (and cassette) where a local run writes them."""
    events_file = runner.options.output_dir / "events" / f"{case.id}.jsonl"
    events_file.parent.mkdir(parents=True, exist_ok=True)
    events_file.write_text(outcome.events, encoding="utf-8")
    if outcome.cassette is not None:
        target = runner.suite.cassette_path(case)  # as Cassette.save: no planted link followed
        data = outcome.cassette.encode("utf-8")
        write_atomic(target, data, perms=0o644, root=anchor(target, Path.cwd())[0])
    return outcome.result.model_copy(
        update={
            "events_file": str(events_file) if outcome.result.events_file else None,
            "attempts": outcome.result.attempts + lost,
        }
    )


def provider_env_vars(env: Environment) -> dict[str, str]:
    """The provider settings (keys, models, endpoints) a worker needs, for the job's runtime
    environment: only what the user's environment configured, nothing else of it."""
    out: dict[str, str] = {}
    for name, settings in env.providers.items():
        provider = env.provider(name)
        key_var = KEY_VARS[provider.name]
        if key_var and settings.api_key is not None:
            out[key_var] = settings.api_key.get_secret_value()
        if settings.model:
            out[MODEL_VARS[provider.name]] = settings.model
        if settings.base_url:
            out[URL_VARS[provider.name]] = settings.base_url
    return out
