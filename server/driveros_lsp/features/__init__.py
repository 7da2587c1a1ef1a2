"""One module per LSP feature; each has ``setup(server)`` that registers its handlers."""
