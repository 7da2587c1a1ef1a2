"""``issue-bot``: read an issue, run the agent in review mode on a scratch copy, and write a
proposed patch plus a summary. The user's files are never touched."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from driveros._errors import ConfigError, DriverosError
from driveros.agent import ApproveMode, Event
from driveros.config import MAX_ITERATIONS, Environment
from driveros.evals import Corpus, CorpusRecord
from driveros.review import combined_patch
from driveros.runs import RunSpec, execute_run

_GITHUB_REF = re.compile(r"^(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)#(?P<number>\d+)$")

TASK = """Resolve the following issue in this repository. Investigate with the tools, make
the smallest change that fixes it, run the project's own tests or checks to prove it, and
finish with a short summary of what you changed and why.

{issue}"""


class Issue(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str
    body: str
    source: str

    def markdown(self) -> str:
        return f"# {self.title}\n\n{self.body}".strip() + "\n"


class IssueBotResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    outcome: str
    exit_code: int
    verified: bool
    files: list[str]
    patch_path: str
    summary_path: str
    record_id: str | None = None


def parse_markdown_issue(text: str, *, source: str) -> Issue:
    text = text.strip()
    if not text:
        raise ConfigError("the issue is empty")
    first, _, rest = text.partition("\n")
    title = first.lstrip("#").strip() or "untitled issue"
    return Issue(title=title, body=rest.strip(), source=source)


async def fetch_github_issue(ref: str, env: Environment, *, timeout: float = 20.0) -> Issue:
    """``owner/repo#123`` through the GitHub REST API (needs the network and GITHUB_TOKEN)."""
    match = _GITHUB_REF.match(ref)
    if not match:
        raise ConfigError(f"not a GitHub issue reference: {ref!r} (use owner/repo#123)")
    import httpx

    headers = {"accept": "application/vnd.github+json"}
    if env.github_token is not None:
        headers["authorization"] = f"Bearer {env.github_token.get_secret_value()}"
    url = (
        f"{env.github_api_url.rstrip('/')}/repos/{match['owner']}/{match['repo']}"
        f"/issues/{match['number']}"
    )
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise ConfigError(f"cannot reach GitHub for {ref}: {exc}") from exc
    if response.status_code != 200:
        raise ConfigError(
            f"GitHub answered {response.status_code} for {ref}: {response.text[:200]}"
        )
    data = response.json()
    return Issue(title=str(data.get("title", "")), body=str(data.get("body") or ""), source=ref)


def _summary(issue: Issue, outcome: str, verified: bool, answer: str, files: list[str]) -> str:
    changed = "\n".join(f"- `{f}`" for f in files) or "- (no changes)"
    return (
        f"# issue-bot: {issue.title}\n\n"
        f"- source: {issue.source}\n- outcome: {outcome}\n"
        f"- verified by tools: {'yes' if verified else 'no'}\n\n"
        f"## Files changed\n\n{changed}\n\n## Agent summary\n\n{answer.strip() or '(none)'}\n"
    )


async def run_issue_bot(
    issue: Issue,
    *,
    workspace: Path,
    out_dir: Path,
    env: Environment,
    on_event: Callable[[Event], Awaitable[None]],
    provider: str | None = None,
    model: str | None = None,
    max_iterations: int = MAX_ITERATIONS,
    approve: ApproveMode = "policy",
    corpus: Corpus | None = None,
) -> IssueBotResult:
    spec = RunSpec(
        task=TASK.format(issue=issue.markdown()),
        workspace=workspace,
        provider=provider,
        model=model,
        review=True,
        approve=approve,
        max_iterations=max_iterations,
    )
    report = await execute_run(spec, env=env, on_event=on_event)
    try:
        patch = combined_patch(report.changes)
        files = [c.path for c in report.changes]
    finally:
        if report.scratch is not None:
            await report.scratch.aclose()
    result = report.result
    summary = _summary(issue, result.outcome, result.verified, result.answer, files)
    await asyncio.to_thread(out_dir.mkdir, parents=True, exist_ok=True)
    patch_path, summary_path = out_dir / "patch.diff", out_dir / "summary.md"
    await asyncio.to_thread(patch_path.write_text, patch, "utf-8")
    await asyncio.to_thread(summary_path.write_text, summary, "utf-8")
    record_id: str | None = None
    if corpus is not None:
        try:
            record = await corpus.add(
                CorpusRecord(
                    kind="issue-bot",
                    input=issue.markdown(),
                    output=patch or summary,
                    model=model or "",
                    provider=provider or "",
                    meta={"outcome": result.outcome, "files": files, "source": issue.source},
                )
            )
            record_id = record.id
        except DriverosError:
            record_id = None
    return IssueBotResult(
        outcome=result.outcome,
        exit_code=result.exit_code,
        verified=result.verified,
        files=files,
        patch_path=str(patch_path),
        summary_path=str(summary_path),
        record_id=record_id,
    )
