"""Code intelligence: the build-diagnostics feed and diagnostics-driven stuck detection.

    feed = DiagnosticsFeed(sandbox)            # detects ruff/mypy/pytest/tsc/go/cargo ...
    before = await feed.snapshot()
    ...                                        # the agent edits files
    after = await feed.snapshot(changed=["src/app.py"])
    delta = diff_snapshots(before, after)      # driveros.diagnostics: new / fixed / unchanged

``BuildDiagnosticsDetector`` judges a run stuck from the snapshots after edit turns. What a
diagnostic is, identity, deltas and target matching live in ``driveros.diagnostics``.
See docs/intel.md for the configuration schema and the detector's rules.
"""

from driveros.intel._config import (
    CheckSpec,
    IntelConfig,
    IntelConfigError,
    ParserName,
    WorkspaceConfig,
    has_workspace_config,
    load_config,
    parse_config,
    read_workspace_config,
)
from driveros.intel._declared import DeclaredCheck, read_declared_build
from driveros.intel._detect import BuildPlan
from driveros.intel._detector import BuildDiagnosticsDetector
from driveros.intel._feed import DiagnosticsFeed
from driveros.intel._feed_run import CheckApproval, FeedOptions
from driveros.intel._jobs import JobLimiter, default_limiter
from driveros.intel._parse_common import ParseResult, PathContext
from driveros.intel._parsers import get_parser, parse_output
from driveros.intel._plan import task_paths
from driveros.intel._results import CheckRun

__all__ = [
    "BuildDiagnosticsDetector",
    "BuildPlan",
    "CheckApproval",
    "CheckRun",
    "CheckSpec",
    "DeclaredCheck",
    "DiagnosticsFeed",
    "FeedOptions",
    "IntelConfig",
    "IntelConfigError",
    "JobLimiter",
    "ParseResult",
    "ParserName",
    "PathContext",
    "WorkspaceConfig",
    "default_limiter",
    "get_parser",
    "has_workspace_config",
    "load_config",
    "parse_config",
    "parse_output",
    "read_declared_build",
    "read_workspace_config",
    "task_paths",
]
