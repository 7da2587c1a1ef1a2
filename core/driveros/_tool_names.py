"""The model-facing tool vocabulary, defined once.

The agent describes these tools to the model (``driveros.agent``), the approval policies sort
them into tiers (``driveros.approval``), the diagnostics feed watches the edits
(``driveros.intel``) and front ends label them (``driveros.acp``); all of them import the names
from here.
"""

from __future__ import annotations

#: The language-server tools that only observe (``rename`` edits).
SEMANTIC_READ_TOOLS = ("definition", "references", "hover", "symbols")
#: The tool whose ``command`` argument is a shell command.
RUN_TOOL = "run"
#: Tools that only observe: every policy allows them.
READ_ONLY_TOOLS: frozenset[str] = frozenset(
    {"read_file", "list_files", "search", "diagnostics", *SEMANTIC_READ_TOOLS}
)
#: Tools that edit files inside the fenced (scratch) workspace.
EDIT_TOOLS: frozenset[str] = frozenset({"write_file", "edit_file", "rename"})
#: Every built-in tool, in the order the model is shown them.
TOOL_NAMES: tuple[str, ...] = (
    RUN_TOOL,
    "read_file",
    "write_file",
    "edit_file",
    "search",
    "list_files",
    "diagnostics",
    *SEMANTIC_READ_TOOLS,
    "rename",
)
