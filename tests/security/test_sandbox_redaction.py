"""Row 10 of issue 13 (the redaction half): secrets that still get through are masked.

Values from every ``.env*`` file of the workspace (keys the real environment shadows too), the
user's secret variables and common token shapes are masked in model input, events, memory
writes and the corpus, however a stream chops them up.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from driveros.agent import (
    Redactor,
    ToolCall,
    ToolResult,
    dotenv_secret_values,
)
from driveros.evals import Corpus, CorpusRecord
from driveros.llm import openaicompat
from driveros.memory import AgentMemory, MemoryStore
from driveros.runs import RunSpec
from driveros.sandbox import dotenv_assignments
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.memory.test_agent_memory import transcript
from tests.security._scripted_run import scripted_run

KNOWN = [
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "correct horse battery staple",  # a value with spaces
    "sk-live-0123456789abcdef",
]
TOKENS = [
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-123456789012-abcdefghijkl",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx8f0aYtQ\n"
    "Zm9vYmFyYmF6cXV4\n-----END RSA PRIVATE KEY-----"
)
URL = "postgres://admin:hunter2pw@db.internal:5432/app"
#: What must never come out, whatever the chunking.
FORBIDDEN = [*KNOWN, *TOKENS, "MIIEowIBAAKCAQEAx8f0aYtQ", "hunter2pw"]

REDACTOR = Redactor(KNOWN)

pieces = st.one_of(
    st.sampled_from([*KNOWN, TOKENS[0], *TOKENS[2:], PEM]),
    # the generic sk- shape and a URL's credentials are recognised at a word start only
    st.sampled_from([f" {TOKENS[1]}", f"={TOKENS[1]}", f" {URL}", f"({URL}"]),
    st.sampled_from(["word", "key=", " ", "\n", "\t", "-", "--", "-----BEGIN ", ":", "@", "sk-"]),
    st.text(alphabet="abcXYZ019 -_\n.:/@=", max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(pieces, max_size=14), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_sandbox_redaction_holds_across_any_chunking(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    guard = REDACTOR.stream()
    emitted = [guard.push(chunk) for chunk in chunks] + [guard.flush()]
    whole = REDACTOR.text(text)
    assert "".join(emitted) == whole
    for secret in FORBIDDEN:
        assert secret not in whole
        assert all(secret not in piece for piece in emitted)


def test_sandbox_redaction_token_shapes_and_plain_text() -> None:
    for token in TOKENS:
        assert REDACTOR.text(f"x {token} y") == "x [REDACTED] y"
    assert REDACTOR.text(URL) == "postgres://[REDACTED]@db.internal:5432/app"
    assert REDACTOR.text(f"a\n{PEM}\nb") == "a\n[REDACTED]\nb"
    assert REDACTOR.text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA") == "[REDACTED]"
    plain = "def task_runner(): return 'sk-short' + http://example.com/x AKIA"
    assert REDACTOR.text(plain) == plain


def test_sandbox_redaction_dotenv_values_shadowed_keys_too(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n"
        "DB_URL=postgres://admin:pw@db/app\n"
        "OPENAI_API_KEY=sk-live-shadowed-by-real-env\n"
        "DEBUG=true\nHOST=localhost:5432\nNAME=development\n"
    )
    (tmp_path / ".env.local").write_text("SESSION_SECRET='s3cr3t value'\n")
    (tmp_path / "services" / "api").mkdir(parents=True)
    (tmp_path / "services" / "api" / "prod.env").write_text("API_KEY=nested-api-key-value\n")
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / ".env").write_text("TOKEN=dependency-token-value\n")
    (tmp_path / "fifo.env").symlink_to("/dev/zero")  # never followed
    assert "nested-api-key-value" not in dict(dotenv_assignments(tmp_path)).values()
    values = dotenv_secret_values(dotenv_assignments(tmp_path, recursive=True))
    assert "nested-api-key-value" in values and "dependency-token-value" not in values
    for secret in (
        "wJalrXUtnFEMI/K7MDENG",
        "postgres://admin:pw@db/app",
        "sk-live-shadowed-by-real-env",
        "s3cr3t value",
    ):
        assert secret in values
    for plain in ("true", "localhost:5432", "development"):
        assert plain not in values
    # the redactor built from them masks a split-free leak in a tool result
    redactor = Redactor(values)
    out = redactor.event(
        ToolResult(run_id="r", turn=1, call_id="c", name="run", ok=True, output=" ".join(values))
    )
    assert isinstance(out, ToolResult) and all(v not in out.output for v in values)
    call = redactor.event(
        ToolCall(run_id="r", turn=1, call_id="c", name="run", arguments={"x": [values[0]]})
    )
    assert isinstance(call, ToolCall) and call.arguments == {"x": ["[REDACTED]"]}


async def test_sandbox_redaction_corpus(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path / "corpus.jsonl", secrets=["my-own-secret-value"])
    await corpus.add(
        CorpusRecord(
            kind="commit-msg",
            input=f"diff with {TOKENS[0]} and my-own-secret-value",
            output=f"msg {URL}",
        )
    )
    raw = (tmp_path / "corpus.jsonl").read_text()
    assert TOKENS[0] not in raw and "my-own-secret-value" not in raw and "hunter2pw" not in raw
    assert json.loads(raw.splitlines()[0])


async def test_sandbox_redaction_memory_never_stores_a_secret(tmp_path: Path) -> None:
    """A model that reassembles a split .env secret, or saw a token, cannot store it."""
    (tmp_path / ".env").write_text("DB_PASSWORD=split-then-joined-pw\n")
    secrets = dotenv_secret_values(dotenv_assignments(tmp_path))
    extracted = {
        "facts": [
            "the database password is split-then-joined-pw",
            f"CI authenticates with {TOKENS[2]}",
            f"the service key is {KNOWN[0]}",
            "tests run with pytest -q",
        ]
    }
    store = await MemoryStore.open(tmp_path / "mem.db", scope="s")
    server = ScriptedModelServer([Turn(text=json.dumps(extracted))])
    await server.start()
    provider = openaicompat.openai("m", base_url=server.openai_base_url, api_key="k")
    try:
        memory = AgentMemory(store, provider, redact=[*secrets, KNOWN[0]])
        written = await memory.store(
            task="t", answer="a", transcript=transcript(), verified=True, run_id="r"
        )
        assert written == 1, memory.last_report
        assert [f.text for f in await store.list_facts()] == ["tests run with pytest -q"]
    finally:
        await provider.aclose()
        await server.aclose()
        await store.aclose()


async def test_sandbox_redaction_agent_run_end_to_end(tmp_path: Path) -> None:
    """A hostile repository's secrets, through a whole run: none reaches the model or a trace."""
    ws = tmp_path / "ws"
    ws.mkdir()
    aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzEXAMPLE"
    db = "postgres://admin:s3cretpw@db.internal/app"
    shadowed = "sk-live-shadowed-0123456789abcd"
    (ws / ".env").write_text(
        f"AWS_SECRET_ACCESS_KEY={aws}\nDB_URL={db}\nOPENAI_API_KEY={shadowed}\n"
    )
    (ws / "notes.txt").symlink_to(".env")
    # copies that leaked elsewhere (a log, a fixture): readable, so redaction must hold
    (ws / "leak.log").write_text(f"aws={aws}\ndb={db}\nkey={shadowed}\ntok={TOKENS[2]}\n")
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec("read_file", {"path": ".env"}),
                ToolCallSpec("read_file", {"path": "notes.txt"}),
                ToolCallSpec("search", {"pattern": "AWS|sk-live"}),
                ToolCallSpec("read_file", {"path": "leak.log"}),
                ToolCallSpec("run", {"command": "cat leak.log"}),
            ]
        ),
        Turn(text="done"),
    ]
    spec = RunSpec(task="look around", workspace=ws, diagnostics=False, approve="never")
    seen = await scripted_run(turns, spec, "sk-real-user-key-000000000000")
    assert seen.report.result.outcome == "answered", seen.report.result
    for secret in (aws, db, "s3cretpw", shadowed, TOKENS[2], "sk-real-user-key-000000000000"):
        assert secret not in seen.sent, secret
        assert secret not in seen.trace, secret
    results = [e for e in seen.events if isinstance(e, ToolResult)]
    assert [r.ok for r in results[:2]] == [False, False]  # .env and the link to it: refused
    assert "[REDACTED]" in results[3].output
