"""The workspace configuration schema and toolchain detection from files."""

from __future__ import annotations

import pytest

from driveros import ConfigError
from driveros.intel import CheckSpec, IntelConfig, IntelConfigError, load_config, parse_config
from driveros.intel._detect import detect_checks
from driveros.intel._probe import Probe, parse_probe, probe_script
from driveros.intel._scan import glob_match

PYPROJECT = """
[project]
name = "x"

[tool.driveros.diagnostics]
timeout = 30
disable = ["pytest"]
pytest = "run"

[[tool.driveros.diagnostics.checks]]
name = "lint"
command = "flake8 ."
parser = "gnu"
triggers = ["*.py", "setup.cfg"]
timeout = 5
"""


def test_load_config_reads_pyproject_table() -> None:
    cfg = load_config({"pyproject.toml": PYPROJECT})
    assert cfg == IntelConfig(
        timeout=30,
        disable=("pytest",),
        pytest="run",
        checks=(
            CheckSpec(
                name="lint",
                command="flake8 .",
                parser="gnu",
                triggers=("*.py", "setup.cfg"),
                timeout=5,
            ),
        ),
    )


def test_load_config_driveros_toml_wins_and_defaults_without_table() -> None:
    ours = (
        '[diagnostics]\nauto = false\n[[diagnostics.checks]]\nname = "c"\ncommand = "make check"\n'
    )
    cfg = load_config({"pyproject.toml": PYPROJECT, ".driveros.toml": ours})
    assert not cfg.auto and [c.name for c in cfg.checks] == ["c"]
    assert load_config({"pyproject.toml": "[project]\nname='x'\n"}) == IntelConfig()


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ({"checks": [{"name": "x", "command": "y", "parser": "nope"}]}, "checks.0.parser"),
        ({"checks": [{"name": "x"}]}, "checks.0.command"),
        ({"timeout": -1}, "timeout"),
        ({"typo_key": 1}, "typo_key"),
        ({"checks": [{"name": "x", "command": "y", "files_command": "z"}]}, "{files}"),
    ],
)
def test_parse_config_rejects_bad_tables_with_a_typed_error(
    table: dict[str, object], fragment: str
) -> None:
    with pytest.raises(IntelConfigError) as info:
        parse_config(table, origin=".driveros.toml")
    assert isinstance(info.value, ConfigError)
    assert fragment in str(info.value) and ".driveros.toml" in str(info.value)


def test_load_config_invalid_toml_is_a_config_error() -> None:
    with pytest.raises(IntelConfigError, match="not valid TOML"):
        load_config({".driveros.toml": "[diagnostics\n"})


def test_probe_script_round_trips_through_parse_probe() -> None:
    script = probe_script(["ruff", "a b"])
    assert "'a b'" in script
    probe = parse_probe("root\t/ws\nroot\t/real/ws\ntool\truff\t/usr/bin/ruff\njunk\n")
    assert probe.roots == ("/ws", "/real/ws") and dict(probe.found) == {"ruff": "/usr/bin/ruff"}


def _names(
    files: list[str],
    tools: list[str],
    config: IntelConfig | None = None,
    texts: dict[str, str] | None = None,
) -> list[str]:
    probe = Probe(roots=("/ws",), found={t: f"/bin/{t}" for t in tools})
    plan = detect_checks(files, texts or {}, probe, config or IntelConfig(), cache="/tmp/c")
    return [c.name for c in plan]


def test_detect_runs_only_tools_that_exist() -> None:
    files = ["app.py", "tests/test_app.py", "go.mod", "main.go", "Cargo.toml", "src/main.rs"]
    # nothing configured: ruff is the floor (errors only), no type checker; pytest collects
    assert _names(files, ["ruff", "mypy", "pytest", "go", "cargo", "python3"]) == [
        "ruff",
        "pytest",
        "go",
        "cargo",
    ]
    # the project's own mypy, configured
    texts = {"pyproject.toml": "[tool.mypy]\n"}
    names = _names([*files, "pyproject.toml"], [".venv/bin/mypy", "ruff"], texts=texts)
    assert names == ["ruff", "mypy"]
    # no linter and no type checker: compileall is the floor
    assert _names(files, ["python3"]) == ["compileall"]
    assert _names(files, []) == []


def test_detect_prefers_the_projects_own_venv_and_node_modules() -> None:
    probe = Probe(
        found={
            ".venv/bin/ruff": ".venv/bin/ruff",
            "ruff": "/usr/bin/ruff",
            "web/node_modules/.bin/tsc": "x",
        }
    )
    plan = detect_checks(
        ["a.py", "web/tsconfig.json", "web/src/a.ts"], {}, probe, IntelConfig(), cache="/c"
    )
    by_name = {c.name: c for c in plan}
    assert by_name["ruff"].command.startswith(".venv/bin/ruff check")
    assert (
        by_name["tsc:web"].command.startswith("./node_modules/.bin/tsc")
        and by_name["tsc:web"].cwd == "web"
    )
    assert glob_match("web/src/a.ts", by_name["tsc:web"].triggers)
    assert not glob_match("other/a.ts", by_name["tsc:web"].triggers)


def test_detect_pyright_when_the_project_configures_it() -> None:
    texts = {"pyproject.toml": "[tool.pyright]\nstrict = []\n"}
    own = [".venv/bin/mypy", ".venv/bin/pyright"]
    assert _names(["a.py", "pyproject.toml"], own, texts=texts) == ["pyright"]
    # a type checker the project does not configure runs only when asked for
    assert _names(["a.py"], own) == []
    assert _names(["a.py"], ["mypy", "pyright"], IntelConfig(tools=("mypy",))) == ["mypy"]
    assert _names(["a.py"], own, IntelConfig(type_checker="off", tools=("mypy",))) == []


def test_detect_config_disables_replaces_and_adds() -> None:
    mine = CheckSpec(name="mypy", command="mypy --strict src", parser="mypy")
    extra = CheckSpec(name="shellcheck", command="shellcheck -f gcc *.sh")
    cfg = IntelConfig(disable=("ruff",), checks=(mine, extra))
    probe = Probe(found={"ruff": "r", "mypy": "m", "python3": "p"})
    plan = detect_checks(["a.py"], {}, probe, cfg, cache="/c")
    assert [c.name for c in plan] == ["compileall", "mypy", "shellcheck"]
    assert plan[1] == mine
    assert [
        c.name
        for c in detect_checks(
            ["a.py"], {}, probe, IntelConfig(auto=False, checks=(extra,)), cache="/c"
        )
    ] == ["shellcheck"]


def test_detect_nested_go_and_cargo_projects_topmost_only() -> None:
    files = ["svc/go.mod", "svc/main.go", "Cargo.toml", "crates/a/Cargo.toml", "src/lib.rs"]
    assert _names(files, ["go", "cargo"]) == ["go:svc", "cargo"]


def test_detect_mypy_targets_follow_the_projects_config() -> None:
    probe = Probe(found={".venv/bin/mypy": "m"})

    def cmd(texts: dict[str, str], config: IntelConfig | None = None) -> str:
        files = ["a.py", *texts]
        (spec,) = detect_checks(files, texts, probe, config or IntelConfig(), cache="/c")
        return spec.command

    assert cmd({"pyproject.toml": "[tool.mypy]\nfiles = ['src']\n"}).endswith('mypy"')
    assert cmd({"pyproject.toml": "[tool.mypy]\nstrict = true\n"}).endswith(" .")
    assert "--exclude" in cmd({}, IntelConfig(tools=("mypy",)))


@pytest.mark.parametrize(
    ("path", "patterns", "hit"),
    [
        ("a/b/c.py", ["*.py"], True),
        ("c.py", ["**/*.py"], True),
        ("src/x/c.py", ["src/**/*.py"], True),
        ("lib/x/c.py", ["src/**/*.py"], False),
        ("pyproject.toml", ["pyproject.toml"], True),
        ("sub/pyproject.toml", ["./pyproject.toml", "x/"], False),
        ("gen/deep/file.txt", ["gen/"], True),
    ],
)
def test_glob_match_semantics(path: str, patterns: list[str], hit: bool) -> None:
    assert glob_match(path, patterns) is hit
