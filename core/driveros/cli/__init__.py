"""The ``driveros`` command line."""

from driveros.cli._main import entry as main

__all__ = ["main"]
