"""Semantic tools backed by language servers running in the run's sandbox.

``SemanticTools(sandbox)`` answers ``definition``, ``references``, ``hover``, ``symbols`` and
``rename`` with exactly what the language server for the file answers; see docs/semantic.md
(its "Security" for what the servers may reach) and docs/cli.md, "Tools".
"""

from __future__ import annotations

from driveros.semantic._args import SEMANTIC_TOOLS, call_semantic
from driveros.semantic._client import LanguageServerError, LspClient
from driveros.semantic._diagnostics import (
    WarmDiagnostics,
    files_changed,
    start_server,
    warm_diagnostics,
)
from driveros.semantic._docker import docker_doctor_rows, docker_server_mounts
from driveros.semantic._registry import (
    DEFAULT_SERVERS,
    ServerSpec,
    doctor_rows,
    load_user_servers,
    merge_servers,
    server_mounts,
)
from driveros.semantic._semantic import SemanticResult, SemanticTools, hover_text

__all__ = [
    "DEFAULT_SERVERS",
    "SEMANTIC_TOOLS",
    "LanguageServerError",
    "LspClient",
    "SemanticResult",
    "SemanticTools",
    "ServerSpec",
    "WarmDiagnostics",
    "call_semantic",
    "docker_doctor_rows",
    "docker_server_mounts",
    "doctor_rows",
    "files_changed",
    "hover_text",
    "load_user_servers",
    "merge_servers",
    "server_mounts",
    "start_server",
    "warm_diagnostics",
]
