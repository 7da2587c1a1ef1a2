"""The adversarial council: author, critic and referee models review an artifact."""

from driveros.council._council import consult, review, seat_council, seat_name
from driveros.council._gate import review_proposal
from driveros.council._models import (
    ConsultResult,
    CouncilError,
    CouncilIssue,
    CouncilVerdict,
    MemberAnswer,
    Round,
)
from driveros.council._parse import StructuredOutputError, extract_json_object

__all__ = [
    "ConsultResult",
    "CouncilError",
    "CouncilIssue",
    "CouncilVerdict",
    "MemberAnswer",
    "Round",
    "StructuredOutputError",
    "consult",
    "extract_json_object",
    "review",
    "review_proposal",
    "seat_council",
    "seat_name",
]
