"""``driveros eval run … --executor ray`` on a real Ray cluster (head + two workers).

The cluster lives in a network namespace of its own where loopback is the only interface
(Ray binds every interface otherwise: ../shared/recipes/services.md), and every process that
talks to it (the ``driveros eval`` runs) is started inside the same namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
HEAD = "127.0.0.1:6379"


def _can_make_namespaces() -> str | None:
    if os.geteuid() != 0:
        return "needs root to make a network namespace for the Ray cluster"
    if shutil.which("ip") is None:
        return "needs iproute2 (ip netns)"
    if not (BIN / "ray").exists():
        return "ray is not installed (pip install 'driveros[ray]')"
    return None


class Cluster:
    def __init__(self, netns: str, temp_dir: Path) -> None:
        self.netns = netns
        self.temp_dir = temp_dir

    def run(
        self, *argv: str, check: bool = True, timeout: float = 300, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
            # The cluster is alone in its namespace: no token to share between its nodes, and
            # none of the user's ~/.ray to pick up.
            "RAY_AUTH_MODE": "disabled",
            "HOME": str(self.temp_dir / "home"),
        }
        for name in ("RAY_ADDRESS", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            env.pop(name, None)
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv],
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
            env=env,
            cwd=cwd,
        )

    def eval(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return self.run(str(BIN / "driveros"), "eval", "run", *args, check=False, cwd=cwd)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = _can_make_namespaces()
    if reason is not None:
        if os.environ.get("DRIVEROS_CI"):
            pytest.fail(f"CI must run the Ray tests: {reason}")
        pytest.skip(reason)
    netns = f"driveros-ray-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    temp = Path(f"/tmp/ray-{netns[-8:]}")  # Ray's socket paths must stay short
    box = Cluster(netns, temp)
    (temp / "home").mkdir(parents=True, exist_ok=True)
    try:
        box.run("ip", "link", "set", "lo", "up")
        ray = str(BIN / "ray")
        box.run(
            ray, "start", "--head", "--port=6379", "--num-cpus=1", "--include-dashboard=false",
            "--disable-usage-stats", f"--temp-dir={temp}",
        )  # fmt: skip
        for _ in range(2):
            box.run(ray, "start", f"--address={HEAD}", "--num-cpus=1", "--disable-usage-stats")
        yield box
    finally:
        box.run(str(BIN / "ray"), "stop", "--force", check=False, timeout=120)
        subprocess.run(["ip", "netns", "del", netns], check=False)
        shutil.rmtree(temp, ignore_errors=True)


def _comparable(results: dict[str, object]) -> list[dict[str, object]]:
    """What must be equal between executors: everything but timings and where logs went."""
    cases = results["cases"]
    assert isinstance(cases, list)
    return [
        {k: v for k, v in case.items() if k not in ("duration_ms", "events_file")} for case in cases
    ]


@pytest.mark.parametrize("suite", ["smoke", "fix-failing-test"])
def test_ray_executor_matches_local_case_for_case(
    cluster: Cluster, tmp_path: Path, suite: str
) -> None:
    ray_out, local_out = tmp_path / "ray", tmp_path / "local"
    common = ("--replay", "--strict-replay", "--format", "json", "--concurrency", "2")
    on_ray = cluster.eval(
        suite, *common, "--executor", "ray", "--ray-address", HEAD, "--out", str(ray_out),
        cwd=tmp_path,
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    here = cluster.eval(suite, *common, "--out", str(local_out), cwd=tmp_path)
    assert here.returncode == 0, here.stderr[-3000:]

    ray_results = json.loads((ray_out / "results.json").read_text())
    local_results = json.loads((local_out / "results.json").read_text())
    assert _comparable(ray_results) == _comparable(local_results)
    assert json.loads(on_ray.stdout)["cases"] == ray_results["cases"]
    for case in ray_results["cases"]:
        log = ray_out / "events" / f"{case['case_id']}.jsonl"
        assert case["events_file"] == str(log)
        kinds = [json.loads(line)["type"] for line in log.read_text().splitlines()]
        assert kinds[0] == "run_started" and kinds[-1] == "result"
    assert (ray_out / "report.html").is_file()


#: The killer case's command: the watcher below kills the Ray worker running it, once. The
#: command itself cannot (the local tier's sandbox hides every process outside it, ours too).
KILLER_COMMAND = "sleep 3.14159"


def _kill_the_worker_running(argv: list[bytes], marker: Path, stop: threading.Event) -> None:
    """Kill the Ray worker (``ray::…``) above the first process whose command line is ``argv``
    and write ``marker``; only once."""
    wanted = b"\0".join(argv) + b"\0"
    while not stop.wait(0.05):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if (entry / "cmdline").read_bytes() != wanted:
                    continue
            except OSError:
                continue
            pid = int(entry.name)
            while pid > 1:
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                    stat = Path(f"/proc/{pid}/stat").read_text()
                except OSError:
                    break
                if cmdline.startswith(b"ray::"):
                    marker.touch()
                    os.kill(pid, signal.SIGKILL)
                    return
                pid = int(stat.rsplit(")", 1)[1].split()[1])


def test_a_worker_killed_mid_case_is_retried_as_infra(cluster: Cluster, tmp_path: Path) -> None:
    suite_dir = tmp_path / "suite"
    (suite_dir / "ws").mkdir(parents=True)
    (suite_dir / "ws" / "notes.txt").write_text("the answer is 42\n")
    (suite_dir / "suite.yaml").write_text(
        textwrap.dedent(
            """\
            name: lost-worker
            cases:
              - id: killer
                workspace: ws
                task: Wait a little and say done.
                scorers: [{type: answer, contains: done}]
                scripted:
                  - tool_calls: [{name: run, arguments: {command: 'sleep 3.14159'}}]
                  - text: done
              - id: bystander
                workspace: ws
                task: What is the answer in notes.txt?
                scorers: [{type: answer, contains: '42'}]
                scripted:
                  - tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
                  - text: The answer is 42.
            """
        )
    )
    out = tmp_path / "out"
    stop = threading.Event()
    argv = [part.encode() for part in KILLER_COMMAND.split()]
    watcher = threading.Thread(
        target=_kill_the_worker_running, args=(argv, tmp_path / "killed-once", stop), daemon=True
    )
    watcher.start()
    try:
        done = cluster.eval(
            str(suite_dir), "--record", "--scripted", "--format", "json", "--executor", "ray",
            "--ray-address", HEAD, "--out", str(out), "--retries", "2",
            cwd=tmp_path,
        )  # fmt: skip
    finally:
        stop.set()
        watcher.join(10)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "killed-once").exists(), "the first attempt's worker was never killed"
    cases = {c["case_id"]: c for c in json.loads(done.stdout)["cases"]}
    assert cases["killer"]["passed"] and cases["killer"]["attempts"] == 2
    assert cases["killer"]["infra_error"] is None
    assert cases["bystander"]["passed"] and cases["bystander"]["attempts"] == 1
    assert "Ray task lost" in done.stderr
    # record mode on a worker still writes the cassettes beside the suite on this machine
    assert (suite_dir / "cassettes" / "killer.json").is_file()


def test_without_ray_the_executor_is_a_setup_error_naming_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from driveros.cli._main import main\n"
        "raise SystemExit(main(['eval', 'run', 'smoke', '--replay', '--executor', 'ray',"
        f" '--out', {str(tmp_path / 'out')!r}]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 1, proc.stderr
    assert "pip install 'driveros[ray]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_run_started_locally_resumes_on_ray(cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = cluster.eval(
        "smoke", "--replay", "--case", "module-path", "--out", str(out), cwd=tmp_path
    )
    assert first.returncode == 0, first.stderr[-3000:]
    rest = cluster.eval(
        "smoke", "--replay", "--format", "json", "--executor", "ray", "--ray-address", HEAD,
        "--out", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert rest.returncode == 0, rest.stderr[-3000:]
    progress = [line for line in rest.stderr.splitlines() if line.startswith(("[#", "[."))]
    assert [line.split("]")[1].split()[0] for line in progress] == ["2/3", "3/3"]
    cases = json.loads(rest.stdout)["cases"]
    assert [c["case_id"] for c in cases] == ["module-path", "greeting", "list-python-files"]
    assert all(c["passed"] for c in cases)
