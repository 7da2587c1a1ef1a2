"""The everyday commands that feed the dogfood corpus: ``commit-msg`` and ``issue-bot``."""

from driveros._errors import GitError
from driveros.dogfood._commit_msg import (
    CommitMsgError,
    install_hooks,
    normalize,
    propose,
    reconcile,
    record_proposal,
    staged_diff,
    write_into_message_file,
)
from driveros.dogfood._issue_bot import (
    Issue,
    IssueBotResult,
    fetch_github_issue,
    parse_markdown_issue,
    run_issue_bot,
)

__all__ = [
    "CommitMsgError",
    "GitError",
    "Issue",
    "IssueBotResult",
    "fetch_github_issue",
    "install_hooks",
    "normalize",
    "parse_markdown_issue",
    "propose",
    "reconcile",
    "record_proposal",
    "run_issue_bot",
    "staged_diff",
    "write_into_message_file",
]
