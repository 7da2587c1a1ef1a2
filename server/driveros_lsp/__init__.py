"""driveros-lsp: the agent behind the Language Server Protocol (pygls 2.x)."""

__all__: list[str] = []
