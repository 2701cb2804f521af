"""The typer command-line interface: one module per command; ``main.run_command_line`` turns what a command
raises into a message and an exit code (``alisio.core.exit_codes.ExitCode``)."""
