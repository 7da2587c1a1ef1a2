"""Ghost text and next-edit suggestions: ``textDocument/inlineCompletion`` (docs/protocol.md,
"Inline completion")."""

from driveros_lsp.inline._post import clean, duplicate_overlap
from driveros_lsp.inline._service import InlineService

__all__ = ["InlineService", "clean", "duplicate_overlap"]
