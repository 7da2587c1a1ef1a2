"""``issue-bot``: read an issue, run the agent in review mode on a scratch copy, and write a
proposed patch plus a summary. The user's files are never touched."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from driveros._atomic import write_atomic
from driveros._errors import ConfigError, DriverosError
from driveros._safe_open import anchor
from driveros._unicode import terminal_safe
from driveros.agent import ApproveMode, Event
from driveros.config import Environment
from driveros.evals import Corpus, CorpusRecord
from driveros.review import combined_patch
from driveros.runs import RunOptions, execute_run

log = logging.getLogger(__name__)

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
    """The summary a person reads: the issue's and the model's text with controls escaped."""
    changed = "\n".join(f"- `{f}`" for f in files) or "- (no changes)"
    return terminal_safe(
        f"# issue-bot: {issue.title}\n\n"
        f"- source: {issue.source}\n- outcome: {outcome}\n"
        f"- verified by tools: {'yes' if verified else 'no'}\n\n"
        f"## Files changed\n\n{changed}\n\n## Agent summary\n\n{answer.strip() or '(none)'}\n"
    )


def _write_outputs(out_dir: Path, workspace: Path, patch: str, summary: str) -> None:
    """``patch.diff`` and ``summary.md`` below ``out_dir``; inside the workspace (or the
    working directory) no link is followed on the way (:mod:`driveros._safe_open`)."""
    for name, text in (("patch.diff", patch), ("summary.md", summary)):
        path = out_dir / name
        root = anchor(path, workspace, Path.cwd())[0]
        write_atomic(path, text.encode("utf-8"), perms=0o644, root=root)


async def run_issue_bot(
    issue: Issue,
    *,
    workspace: Path,
    out_dir: Path,
    env: Environment,
    on_event: Callable[[Event], Awaitable[None]],
    options: RunOptions | None = None,
    approve: ApproveMode = "policy",
    corpus: Corpus | None = None,
) -> IssueBotResult:
    spec = (options or RunOptions()).spec(
        task=TASK.format(issue=issue.markdown()),
        workspace=workspace,
        review=True,
        approve=approve,
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
    patch_path, summary_path = out_dir / "patch.diff", out_dir / "summary.md"
    await asyncio.to_thread(_write_outputs, out_dir, workspace, patch, summary)
    record_id: str | None = None
    if corpus is not None:
        try:
            record = await corpus.add(
                CorpusRecord(
                    kind="issue-bot",
                    input=issue.markdown(),
                    output=patch or summary,
                    model=spec.model or "",
                    provider=spec.provider or "",
                    meta={"outcome": result.outcome, "files": files, "source": issue.source},
                )
            )
            record_id = record.id
        except DriverosError as exc:  # the patch and summary stand without a record
            log.warning("issue-bot: not recorded to the corpus: %s", exc)
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
