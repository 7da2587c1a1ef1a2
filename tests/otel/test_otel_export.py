"""A run's spans reach a loopback OTLP/HTTP receiver, decoded with opentelemetry-proto: the
GenAI attributes, the parent links, span events, and no secret anywhere."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from driveros.otel import otel_wanted, traces_endpoint
from driveros.testing import ToolCallSpec, Turn
from tests.agent.conftest import SECRET, run_scripted


class _Receiver(BaseHTTPRequestHandler):
    bodies: list[bytes]
    paths: list[str]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        type(self).paths.append(self.path)
        if self.path in ("/v1/traces", "/custom/traces"):
            type(self).bodies.append(body)
        out = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[bytes]]]:
    bodies: list[bytes] = []
    handler = type("Handler", (_Receiver,), {"bodies": bodies, "paths": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def _spans(bodies: list[bytes]) -> list[Any]:
    spans = []
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    return spans


async def test_otel_spans_reach_an_otlp_receiver_with_genai_attributes_and_no_secret(
    calc_repo: Path, receiver: tuple[str, list[bytes]]
) -> None:
    endpoint, bodies = receiver
    (calc_repo / "leak.txt").write_text(f"key={SECRET}\n")
    turns = [
        Turn(
            text=f"I see {SECRET}",
            tool_calls=[
                ToolCallSpec("read_file", {"path": "leak.txt"}),
                ToolCallSpec("run", {"command": f"echo {SECRET}"}),
            ],
        ),
        Turn(text=f"The key was {SECRET}."),
    ]
    out = await run_scripted(
        turns,
        calc_repo,
        review=True,
        environ={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "driveros-test"},
    )
    assert out.report.scratch is not None
    await out.report.scratch.aclose()
    assert bodies, "no OTLP export arrived"
    assert all(SECRET.encode() not in body for body in bodies)
    spans = _spans(bodies)
    by_name = {s.name: s for s in spans}
    run = by_name["invoke_agent driveros"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    tools = sorted(s.name for s in spans if s.name.startswith("execute_tool "))
    assert len(chats) == 2 and tools == ["execute_tool read_file", "execute_tool run"]
    attrs = {kv.key: _value(kv.value) for kv in run.attributes}
    result = out.report.result
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.request.model"] == "scripted"
    assert attrs["gen_ai.usage.input_tokens"] == result.usage.input_tokens > 0
    assert attrs["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert attrs["driveros.outcome"] == result.outcome
    assert attrs["driveros.exit_code"] == result.exit_code
    chat_attrs = {kv.key: _value(kv.value) for kv in chats[0].attributes}
    assert chat_attrs["gen_ai.operation.name"] == "chat"
    assert chat_attrs["gen_ai.usage.input_tokens"] > 0
    assert all(c.parent_span_id == run.span_id for c in chats)
    run_tool = by_name["execute_tool run"]
    tool_attrs = {kv.key: _value(kv.value) for kv in run_tool.attributes}
    assert tool_attrs["gen_ai.tool.name"] == "run"
    assert run_tool.parent_span_id in {c.span_id for c in chats}
    approvals = [e for c in chats for e in c.events if e.name == "driveros.approval"]
    assert approvals and {kv.key for kv in approvals[0].attributes} >= {"driveros.decision"}
    assert len({s.trace_id for s in spans}) == 1


def test_otel_settings_follow_the_standard_variables() -> None:
    assert not otel_wanted({})
    assert otel_wanted({}, flag=True)
    assert otel_wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"})
    assert not otel_wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"})
    assert not otel_wanted(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}
    )
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:1/"}) == "http://x:1/v1/traces"
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://y/t"}) == "http://y/t"


def test_otel_sdk_is_not_imported_when_off() -> None:
    code = (
        "import sys, driveros.runs, driveros.cli, driveros.otel, driveros_lsp;"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_otel_from_the_cli_with_the_traces_endpoint_variable(
    calc_repo: Path, receiver: tuple[str, list[bytes]]
) -> None:
    from driveros.testing import ScriptedModelServer
    from tests.cli.conftest import run_cli

    endpoint, bodies = receiver
    async with ScriptedModelServer([Turn(text="done")]) as server:
        run = await run_cli(
            "--task", "say done", "--otel", "--format", "json",
            server=server, cwd=calc_repo,
            extra_env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{endpoint}/custom/traces"},
        )  # fmt: skip
    assert run.code in (0, 2), run.stderr
    names = [s.name for s in _spans(bodies)]
    assert "invoke_agent driveros" in names and "chat scripted" in names
