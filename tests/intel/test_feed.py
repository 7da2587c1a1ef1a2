"""DiagnosticsFeed with real tools on real small projects, through a real LocalSandbox."""

from __future__ import annotations

import os

import pytest

from driveros.agent import DiagnosticsSource, ToolObservation, TurnObservation
from driveros.diagnostics import diff_snapshots, targets_fixed
from driveros.intel import (
    BuildDiagnosticsDetector,
    CheckSpec,
    DiagnosticsFeed,
    FeedOptions,
    IntelConfig,
    read_workspace_config,
)
from tests.intel import _projects as P
from tests.intel.conftest import OpenProject, require_tool


def _where(snapshot_items: object) -> set[tuple[str, int, str | None, str]]:
    return {(i.path, i.line, i.code, i.source) for i in snapshot_items}  # type: ignore[attr-defined]


async def test_feed_python_project_reports_ruff_and_mypy(open_project: OpenProject) -> None:
    async with open_project(P.PYTHON) as sandbox:
        # mypy on PATH, not the project's own: it runs because the settings ask for it
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(tools=("mypy",)))
        assert isinstance(feed, DiagnosticsSource)
        snap = await feed.snapshot()
    assert snap.checks == ("ruff", "mypy")
    assert _where(snap.items) == {
        ("pkg/core.py", 1, "F401", "ruff"),
        ("pkg/core.py", 8, "F821", "ruff"),
        ("pkg/core.py", 5, "return-value", "mypy"),
        ("pkg/core.py", 8, "name-defined", "mypy"),
    }
    assert snap.errors == 3  # F401 is a warning
    assert snap.raw == ""
    # nothing leaked into the workspace: tool caches live outside it
    assert not (sandbox.workspace / ".mypy_cache").exists()
    assert not (sandbox.workspace / ".ruff_cache").exists()


async def test_feed_incremental_reruns_only_what_an_edit_can_affect(
    open_project: OpenProject,
) -> None:
    # a check that only .go files trigger: a Python edit must not rerun it
    counter = CheckSpec(
        name="gofiles", command="ls *.go 2>/dev/null | wc -l", parser="raw", triggers=("*.go",)
    )
    async with open_project(P.PYTHON) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(checks=(counter,), tools=("mypy",)))
        first = await feed.snapshot()
        assert {r.name: r.mode for r in feed.runs} == {
            "ruff": "full",
            "mypy": "full",
            "gofiles": "full",
        }

        original = await sandbox.read_file("pkg/core.py")
        await sandbox.write_file(
            "pkg/core.py", original.replace("return x * 2", "return str(x * 2)")
        )
        second = await feed.snapshot(changed=["pkg/core.py"])
        runs = {r.name: r for r in feed.runs}
        assert runs["ruff"].mode == "files" and runs["ruff"].files == ("pkg/core.py",)
        assert runs["mypy"].mode == "full"
        assert runs["gofiles"].mode == "cached"
        delta = diff_snapshots(first, second)
        assert [(i.code, i.line) for i in delta.fixed] == [("return-value", 5)]
        assert delta.new == ()

        # reverting the edit is answered from the content-hash cache, no tool runs
        await sandbox.write_file("pkg/core.py", original)
        third = await feed.snapshot(changed=["pkg/core.py"])
        assert {r.mode for r in feed.runs} == {"cached"}
        assert third.fingerprint == first.fingerprint

        # a full snapshot ignores every cache and agrees with the incremental one
        full = await feed.snapshot(full=True)
        assert {r.mode for r in feed.runs} == {"full"}
        assert full.fingerprint == third.fingerprint


async def test_feed_per_file_merge_drops_deleted_files(open_project: OpenProject) -> None:
    async with open_project(P.PYTHON) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(type_checker="off"))
        await feed.snapshot()
        await sandbox.remove("pkg/core.py")
        snap = await feed.snapshot()
        assert snap.items == ()
        assert {r.name: r.mode for r in feed.runs} == {"ruff": "files"}


async def test_feed_timeout_is_reported_not_fatal(open_project: OpenProject) -> None:
    slow = CheckSpec(name="slow", command="sleep 30", parser="raw", timeout=0.5)
    quick = CheckSpec(name="quick", command="echo 'a.py:2:3: error: boom [E1]'", parser="gnu")
    async with open_project({"a.py": "x = 1\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(auto=False, checks=(slow, quick)))
        snap = await feed.snapshot()
    by_code = {i.code: i for i in snap.items}
    assert by_code["E1"].path == "a.py" and by_code["E1"].line == 2
    assert by_code["timeout"].severity == "warning" and by_code["timeout"].source == "slow"
    assert "timed out" in snap.raw
    assert {r.name: r.timed_out for r in feed.runs} == {"slow": True, "quick": False}


async def test_feed_keeps_unknown_output_as_raw(open_project: OpenProject) -> None:
    noisy = CheckSpec(
        name="noisy",
        command=(
            "echo 'src/x.c:4:1: warning: odd'; echo 'internal tool panic: 0xdeadbeef' >&2; exit 3"
        ),
        parser="gnu",
    )
    async with open_project({"src/x.c": "int main(void) { return 0; }\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(auto=False, checks=(noisy,)))
        snap = await feed.snapshot()
    assert [(i.path, i.line, i.severity) for i in snap.items] == [("src/x.c", 4, "warning")]
    assert "[noisy] exit 3" in snap.raw and "internal tool panic: 0xdeadbeef" in snap.raw


async def test_feed_runs_the_users_workspace_config_and_reports_a_bad_one(
    open_project: OpenProject,
) -> None:
    files = {
        ".driveros.toml": (
            "[diagnostics]\nauto = false\n[[diagnostics.checks]]\nname = 'todo'\n"
            "command = \"grep -rn TODO --include=*.txt . | sed 's/TODO/warning: TODO/'\"\n"
            "parser = 'gnu'\n"
        ),
        "notes.txt": "first\nTODO write docs\n",
    }
    async with open_project(files) as sandbox:
        found = read_workspace_config(sandbox.workspace)
        assert found.origin == ".driveros.toml" and found.problem is None
        snap = await DiagnosticsFeed(sandbox, config=found.config).snapshot()
        assert snap.checks == ("todo",)
        assert [(i.path, i.line, i.severity) for i in snap.items if i.path == "notes.txt"] == [
            ("notes.txt", 2, "warning")
        ]
        (sandbox.workspace / ".driveros.toml").write_text("[diagnostics]\ntimeout = 'soon'\n")
        bad = read_workspace_config(sandbox.workspace)
        feed = DiagnosticsFeed(
            sandbox,
            config=bad.config,
            options=FeedOptions(config_problem=bad.problem, config_origin=".driveros.toml"),
        )
        snap = await feed.snapshot()
    (problem,) = [i for i in snap.items if i.source == "driveros"]
    assert problem.code == "config" and "timeout" in problem.message
    assert problem.path == ".driveros.toml"
    assert snap.checks == ()  # the defaults took over: nothing to detect in a notes folder


async def test_feed_never_reads_configuration_from_the_workspace_it_checks(
    open_project: OpenProject,
) -> None:
    """The agent writes the feed's workspace: a .driveros.toml there (present at start or
    written later) configures nothing (docs/security.md, "The model writes
    `.driveros.toml` and the feed runs its command")."""
    marker = "feed-ran-a-workspace-command"
    planted = (
        "[diagnostics]\nauto = false\n[[diagnostics.checks]]\nname = 'planted'\n"
        f"command = 'touch {marker}'\n"
    )
    async with open_project({".driveros.toml": planted, "a.py": "a = 1\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(type_checker="off", pytest="off"))
        first = await feed.snapshot()
        await sandbox.write_file(".driveros.toml", planted.replace("planted", "again"))
        await sandbox.write_file("a.py", "a = 2\n")
        second = await feed.snapshot(changed=["a.py", ".driveros.toml"])
        assert "planted" not in first.checks and "again" not in second.checks
        assert not (sandbox.workspace / marker).exists()


async def test_feed_puts_every_configured_command_to_approve(open_project: OpenProject) -> None:
    asked: list[tuple[str, str]] = []

    async def refuse(check: CheckSpec, command: str) -> tuple[bool, str]:
        asked.append((check.name, command))
        return False, "blocked by policy: not on the allowlist"

    custom = CheckSpec(name="mark", command="touch marked; echo 'a.py:1:1: warning: x'")
    cfg = IntelConfig(checks=(custom,), type_checker="off", pytest="off")
    async with open_project({"a.py": "a = 1\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=cfg, options=FeedOptions(approve=refuse))
        snap = await feed.snapshot()
        await sandbox.write_file("a.py", "a = 2\n")
        again = await feed.snapshot(changed=["a.py"])
        assert not (sandbox.workspace / "marked").exists()
    assert asked == [("mark", custom.command)]  # decided once per command line per run
    for s in (snap, again):
        (note,) = [i for i in s.items if i.source == "mark"]
        assert note.code == "check-refused" and "not on the allowlist" in note.message
    assert "ruff" in snap.checks or "compileall" in snap.checks  # built-ins ran unasked


async def test_feed_compileall_is_the_floor(open_project: OpenProject) -> None:
    async with open_project(P.PYTHON_SYNTAX) as sandbox:
        cfg = IntelConfig(disable=("ruff",), type_checker="off")
        snap = await DiagnosticsFeed(sandbox, config=cfg).snapshot()
        assert not any(p.name == "__pycache__" for p in sandbox.workspace.rglob("*"))
    assert snap.checks == ("compileall",)
    assert [(i.path, i.line, i.code) for i in snap.items] == [("broken.py", 1, "SyntaxError")]


async def test_feed_pytest_collection_and_run_modes(open_project: OpenProject) -> None:
    async with open_project(P.PYTEST) as sandbox:
        cfg = IntelConfig(disable=("ruff",), type_checker="off")
        collect = await DiagnosticsFeed(sandbox, config=cfg).snapshot()
        assert [(i.path, i.code) for i in collect.items if i.source == "pytest"] == [
            ("tests/test_broken.py", "collection-error")
        ]
        await sandbox.remove("tests/test_broken.py")
        run = await DiagnosticsFeed(
            sandbox, config=cfg.model_copy(update={"pytest": "run"})
        ).snapshot()
    assert [(i.path, i.line, i.code) for i in run.items if i.source == "pytest"] == [
        ("tests/test_calc.py", 5, "test-failure")
    ]


async def test_feed_cargo_fix_is_verified(open_project: OpenProject) -> None:
    require_tool("cargo")
    async with open_project(P.RUST) as sandbox:
        feed = DiagnosticsFeed(sandbox)
        before = await feed.snapshot()
        targets = [i for i in before.items if i.code == "E0308"]
        assert [(t.path, t.line, t.column) for t in targets] == [("src/main.rs", 2, 18)]
        assert not targets_fixed(before, targets)
        await sandbox.edit("src/main.rs", 'let x: i32 = "s";', "let x: i32 = 7;")
        after = await feed.snapshot(changed=["src/main.rs"])
    assert targets_fixed(after, targets)
    assert after.errors == 0
    assert any(i.code == "unused_variables" for i in after.items)


async def test_feed_go_build_and_vet(open_project: OpenProject) -> None:
    require_tool("go")
    async with open_project(P.GO) as sandbox:
        # the build and vet alone (go test would report the same compile error again)
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(tests="off"))
        snap = await feed.snapshot()
        assert [(i.path, i.line, i.column) for i in snap.items] == [("main.go", 6, 14)]
        await sandbox.edit("main.go", 'var x int = "s"', "var x int = 1")
        fixed = await feed.snapshot()
    assert [(i.path, i.line) for i in fixed.items] == [("lib/lib.go", 5)]  # vet runs once it builds


async def test_feed_typescript_tsc(open_project: OpenProject) -> None:
    require_tool("tsc")
    async with open_project(P.TYPESCRIPT) as sandbox:
        snap = await DiagnosticsFeed(sandbox).snapshot()
    assert {(i.path, i.line, i.code) for i in snap.items} >= {("src/a.ts", 1, "TS2322")}


async def test_feed_eslint_when_configured(open_project: OpenProject) -> None:
    require_tool("eslint")
    async with open_project(P.ESLINT) as sandbox:
        snap = await DiagnosticsFeed(sandbox).snapshot()
    assert {(i.path, i.line, i.code, i.severity) for i in snap.items} == {
        ("src/a.js", 1, "no-unused-vars", "error"),
        ("src/a.js", 2, "no-undef", "warning"),
    }


async def test_feed_pyright_when_it_runs_offline(open_project: OpenProject) -> None:
    require_tool("pyright")
    async with open_project(P.PYTHON) as sandbox:
        probe = await sandbox.run("pyright --version", timeout=30)
        if not probe.ok:
            pytest.skip(f"pyright cannot start here: {probe.stderr.strip()[:200]}")
        snap = await DiagnosticsFeed(sandbox, config=IntelConfig(type_checker="pyright")).snapshot()
    assert snap.checks == ("ruff", "pyright")
    assert ("pkg/core.py", 5, "reportReturnType", "pyright") in _where(snap.items)


def _edit_turn(turn: int, feed_snapshot: object, path: str) -> TurnObservation:
    call = ToolObservation(
        call_id=str(turn), name="write_file", arguments={"path": path}, ok=True, output=""
    )
    return TurnObservation(turn=turn, edited=True, tool_calls=(call,), diagnostics=feed_snapshot)  # type: ignore[arg-type]


async def test_detector_on_real_snapshots_oscillation_fires_progress_does_not(
    open_project: OpenProject,
) -> None:
    states = [
        "a = undefined_one\n",
        "a = undefined_two\n",  # fixes one, breaks two
        "a = undefined_one\n",  # and back: oscillation
    ]
    progress = [
        "a = undefined_one\nb = undefined_two\n",
        "a = undefined_one\nb = 2\n",
        "a = 1\nb = 2\n",
    ]
    async with open_project({"pyproject.toml": P.RUFF_CONFIG, "m.py": "a = 1\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(type_checker="off"))
        baseline = await feed.snapshot()

        detector = BuildDiagnosticsDetector(k=3, baseline=baseline)
        verdicts = []
        for turn, text in enumerate(states, 1):
            await sandbox.write_file("m.py", text)
            snap = await feed.snapshot(changed=["m.py"])
            verdicts.append(detector.observe(_edit_turn(turn, snap, "m.py")))
        assert verdicts[:2] == [None, None]
        assert verdicts[2] is not None and verdicts[2].detail.startswith("oscillation")
        assert verdicts[2].evidence == (
            "m.py:1:5: error [ruff F821] Undefined name `undefined_one`",
        )

        calm = BuildDiagnosticsDetector(k=2, baseline=baseline)
        for turn, text in enumerate(progress, 1):
            await sandbox.write_file("m.py", text)
            snap = await feed.snapshot(changed=["m.py"])
            assert calm.observe(_edit_turn(turn, snap, "m.py")) is None
        assert snap.items == ()


async def test_feed_changed_hint_catches_edits_stat_cannot_see(open_project: OpenProject) -> None:
    cfg = IntelConfig(type_checker="off")
    async with open_project({"pyproject.toml": P.RUFF_CONFIG, "m.py": "a = 1\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=cfg)
        assert (await feed.snapshot()).items == ()
        path = sandbox.workspace / "m.py"
        before = path.stat()
        path.write_text("a = b\n")  # same size; then the old mtime put back
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert (await feed.snapshot()).items == ()  # size and mtime look unchanged
        hinted = await feed.snapshot(changed=[str(path)])  # absolute paths are accepted
    assert [(i.path, i.code) for i in hinted.items] == [("m.py", "F821")]


def _lint_config(word: str) -> str:
    loop = f'do echo "$f:1: warning: {word}"; done'
    return (
        "[diagnostics]\nauto = false\n[[diagnostics.checks]]\nname = 'lint'\nparser = 'gnu'\n"
        f"command = 'for f in *.py; {loop}'\n"
        f"files_command = 'for f in {{files}}; {loop}'\n"
        "per_file = ['*.py']\ntriggers = ['*.py']\n"
    )


async def test_feed_reruns_a_configured_check_on_changed_files_only(
    open_project: OpenProject,
) -> None:
    files = {".driveros.toml": _lint_config("seen"), "a.py": "a = 1\n", "b.py": "b = 1\n"}
    async with open_project(files) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=read_workspace_config(sandbox.workspace).config)
        await feed.snapshot()
        assert [r.mode for r in feed.runs] == ["full"]
        await sandbox.write_file("a.py", "a = 2\n")
        snap = await feed.snapshot()
    assert [(r.mode, r.files) for r in feed.runs] == [("files", ("a.py",))]
    assert [(i.path, i.message) for i in snap.items] == [("a.py", "seen"), ("b.py", "seen")]


async def test_feed_falls_back_when_a_tool_rejects_its_flags(open_project: OpenProject) -> None:
    old_tool = CheckSpec(
        name="typecheck",
        command="echo 'usage: mypy ... error: unrecognized arguments: -O' >&2; exit 2",
        fallback_command="echo 'a.py:3:1: error: Bad thing  [misc]'; exit 1",
        files_command="echo 'new syntax the old tool rejects' {files}",
        per_file=("*.py",),
        parser="mypy",
        triggers=("*.py",),
    )
    async with open_project({"a.py": "x = 1\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(auto=False, checks=(old_tool,)))
        first = await feed.snapshot()
        await sandbox.write_file("a.py", "x = 2\n")
        second = await feed.snapshot()
        assert [r.mode for r in feed.runs] == ["full"]  # not files: that is the new syntax
    for snap in (first, second):
        assert [(i.path, i.line, i.code) for i in snap.items] == [("a.py", 3, "misc")]
        assert snap.raw == ""  # the rejected attempt is not reported as unparsed output


async def test_feed_columns_count_code_points_whatever_the_tool_counts(
    open_project: OpenProject,
) -> None:
    """tsc counts UTF-16 units, go counts bytes, a gnu tool is taken as printed: after é, 中
    and 😀 the item's column must be the code point of the character the tool meant."""
    line = 'const s = "é中😀"; let x: number = s;'
    at = line.rindex("s;")  # the code point the tool points at (0-based)
    utf16 = len(line[:at].encode("utf-16-le")) // 2 + 1
    byte = len(line[:at].encode("utf-8")) + 1
    checks = (
        CheckSpec(
            name="tsc",
            command=f"echo 'uni.ts(2,{utf16}): error TS2322: not a number.'",
            parser="tsc",
        ),
        CheckSpec(name="go", command=f"echo './uni.go:2:{byte}: mismatched'", parser="go"),
        CheckSpec(name="gnu", command=f"echo 'uni.c:2:{at + 1}: error: as printed'", parser="gnu"),
        CheckSpec(name="far", command="echo 'uni.ts(9,40): error TS1: no such line'", parser="tsc"),
    )
    files = {name: f"// header 😀\n{line}\n" for name in ("uni.ts", "uni.go", "uni.c")}
    async with open_project(files) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(auto=False, checks=checks))
        snap = await feed.snapshot()
    columns = {i.source: (i.path, i.line, i.column) for i in snap.items}
    assert columns == {
        "tsc": ("uni.ts", 2, at + 1),
        "go": ("uni.go", 2, at + 1),
        "gnu": ("uni.c", 2, at + 1),
        "far": ("uni.ts", 9, 40),  # no such line: kept as printed
    }
