"""``commit-msg``: a conventional commit message for the staged diff, and the bookkeeping
that turns what the user finally committed into a human verdict for the corpus.

When a message is proposed, a pending note is written to ``.git/driveros-commit-msg.json``.
The ``post-commit`` hook calls :func:`reconcile`: the committed message equal to the proposal
(ignoring comments and whitespace) is *accepted*, a different one *edited* (with the final
text). A proposal followed by no commit is *rejected* when the next proposal is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from pathlib import Path

from pydantic import BaseModel

from driveros._atomic import write_atomic
from driveros._errors import DriverosError, GitError
from driveros._safe_open import anchor, read_bytes, unlink
from driveros._unicode import terminal_safe
from driveros.dogfood._git import git, git_dir
from driveros.evals import Corpus, CorpusRecord, Verdict
from driveros.llm import Provider, Request, system, user

MAX_DIFF_CHARS = 60_000
PENDING_FILE = "driveros-commit-msg.json"
HOOK_MARKER = "# installed by driveros commit-msg"
CONVENTIONAL = re.compile(
    r"^(feat|fix|docs|style|refactor|perf|test|build|ci|chore|revert)(\([\w./-]+\))?!?: \S"
)

PROMPT = """You write git commit messages in the Conventional Commits style.
First line: `type(optional scope): summary` — type is one of feat, fix, docs, style, refactor,
perf, test, build, ci, chore, revert; imperative mood; at most 72 characters; no period.
Then, only if the change needs it, a blank line and a short body wrapped at 72 columns that
says why. Reply with the message only: no code fences, no commentary."""


class CommitMsgError(DriverosError):
    """No message could be proposed (nothing staged, the model failed, ...)."""


class Pending(BaseModel):
    record_id: str
    message: str
    head: str
    created: float


async def staged_diff(repo: Path) -> str:
    diff = await git(repo, "diff", "--cached", "--no-color", "--no-ext-diff")
    if not diff.strip():
        raise CommitMsgError("nothing is staged: `git add` the changes first")
    if len(diff) > MAX_DIFF_CHARS:
        stat_text = await git(repo, "diff", "--cached", "--stat")
        diff = stat_text + "\n(diff truncated)\n" + diff[:MAX_DIFF_CHARS]
    return diff


def clean_message(text: str) -> str:
    """The model's reply as a commit message: fences and trailing blanks gone, and every
    control a terminal or editor would act on escaped (:func:`driveros._unicode.terminal_safe`)."""
    text = terminal_safe(text).strip()
    fence = re.match(r"^```[\w-]*\n(.*?)\n?```$", text, re.DOTALL)
    if fence:
        text = fence.group(1).strip()
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(lines).strip() + "\n"


def normalize(message: str) -> str:
    """A message as git stores it: comment lines and surrounding blank space removed."""
    lines = [line.rstrip() for line in message.splitlines() if not line.startswith("#")]
    return "\n".join(lines).strip()


async def propose(provider: Provider, diff: str, *, recent: str = "") -> str:
    context = f"Recent commit subjects in this repository:\n{recent}\n\n" if recent else ""
    messages = [system(PROMPT), user(f"{context}The staged diff:\n{diff}")]
    text = ""
    for _ in range(2):
        response = await provider.generate(Request(messages=messages, max_tokens=400))
        text = clean_message(response.text())
        if CONVENTIONAL.match(text) and len(text.splitlines()[0]) <= 72:
            return text
        messages = [
            *messages,
            response.message(),
            user(
                "That first line is not a Conventional Commits subject of at most 72 "
                "characters. Reply with the corrected message only."
            ),
        ]
    if not text.strip():
        raise CommitMsgError("the model returned an empty commit message")
    return text


def _read_pending(repo: Path, path: Path) -> Pending | None:
    where = anchor(path, repo)
    data = read_bytes(*where)
    if data is None:
        return None
    try:
        return Pending.model_validate_json(data)
    except ValueError:
        unlink(*where)
        return None


def _write_pending(repo: Path, path: Path, pending: Pending) -> None:
    write_atomic(path, pending.model_dump_json().encode("utf-8"), root=repo)


async def _pending_path(repo: Path) -> Path:
    return (await git_dir(repo)) / PENDING_FILE


async def _head(repo: Path) -> str:
    return (await git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False)).strip()


async def record_proposal(
    repo: Path, corpus: Corpus, *, diff: str, message: str, provider: Provider
) -> CorpusRecord:
    """Store the proposal in the corpus (verdict pending) and remember it for reconcile."""
    path = await _pending_path(repo)
    head = await _head(repo)
    old = await asyncio.to_thread(_read_pending, repo, path)
    if old is not None and old.head == head:
        # The previous proposal was never committed: the user threw it away.
        rejected = Verdict(
            label="rejected", by="commit-msg", note="no commit followed the proposal"
        )
        with contextlib.suppress(DriverosError):
            await corpus.set_verdict(old.record_id, rejected)
    record = await corpus.add(
        CorpusRecord(
            kind="commit-msg",
            input=diff,
            output=message,
            model=provider.model,
            provider=provider.name,
            meta={"repo": str(repo), "head": head},
        )
    )
    pending = Pending(record_id=record.id, message=message, head=head, created=time.time())
    await asyncio.to_thread(_write_pending, repo, path, pending)
    return record


async def reconcile(repo: Path, corpus: Corpus) -> Verdict | None:
    """After a commit: the verdict from what the user actually committed (None if no proposal)."""
    path = await _pending_path(repo)
    pending = await asyncio.to_thread(_read_pending, repo, path)
    if pending is None:
        return None
    final = await git(repo, "log", "-1", "--format=%B")
    if normalize(final) == normalize(pending.message):
        verdict = Verdict(label="accepted", by="commit-msg")
    else:
        verdict = Verdict(label="edited", edit=normalize(final) + "\n", by="commit-msg")
    await corpus.set_verdict(pending.record_id, verdict)
    await asyncio.to_thread(unlink, *anchor(path, repo))
    return verdict


def write_into_message_file(message_file: Path, message: str, *, repo: Path | None = None) -> None:
    """Put ``message`` above whatever git prepared (its comment lines stay below). Below
    ``repo`` (and the working directory) no link is followed to read or replace the file."""
    roots = (*([repo] if repo is not None else []), Path.cwd())
    existing = (read_bytes(*anchor(message_file, *roots)) or b"").decode("utf-8", "replace")
    kept = "\n".join(line for line in existing.splitlines() if line.startswith("#"))
    text = message.rstrip("\n") + "\n\n" + (kept + "\n" if kept else "")
    base, _ = anchor(message_file, *roots)
    write_atomic(message_file, text.encode("utf-8"), perms=0o644, suffix=".driveros-tmp", root=base)


def _hook_script(executable: str, body: str) -> str:
    return (
        "#!/bin/sh\n"
        f"{HOOK_MARKER}\n"
        "# Never blocks a commit: failures only print a warning.\n"
        f'DRIVEROS="{executable}"\n'
        '[ -x "$DRIVEROS" ] || DRIVEROS=driveros\n'
        f"{body} || true\n"
    )


def _write_hooks(repo: Path, hooks: Path, scripts: dict[str, str], *, force: bool) -> list[Path]:
    for name in scripts:
        path = hooks / name
        existing = read_bytes(*anchor(path, repo))
        if existing is not None and HOOK_MARKER.encode() not in existing and not force:
            raise GitError(
                f"{path} exists and is not ours: pass --force to replace it", path=str(path)
            )
    written: list[Path] = []
    for name, script in scripts.items():
        path = hooks / name
        # A link planted at the hook is replaced (never followed), a planted directory refused.
        write_atomic(path, script.encode("utf-8"), perms=0o755, root=anchor(path, repo)[0])
        written.append(path)
    return written


async def install_hooks(repo: Path, *, executable: str, force: bool = False) -> list[Path]:
    """Install ``prepare-commit-msg`` (propose) and ``post-commit`` (reconcile) hooks that
    call ``executable`` (falling back to ``driveros`` on PATH). Refuses to replace hooks that
    are not ours unless ``force``; checks both before writing either."""
    hooks = (await git_dir(repo)) / "hooks"
    scripts = {
        # Only plain `git commit` (no -m, template, merge, squash or amend source).
        "prepare-commit-msg": _hook_script(
            executable, '[ -z "$2" ] && "$DRIVEROS" commit-msg --hook "$1"'
        ),
        "post-commit": _hook_script(executable, '"$DRIVEROS" commit-msg --reconcile'),
    }
    return await asyncio.to_thread(_write_hooks, repo, hooks, scripts, force=force)
