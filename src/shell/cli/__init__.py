"""The typer command-line interface. Only this package raises ``typer.Exit``."""
