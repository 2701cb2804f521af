"""alisio's imperative shell: files, processes, HTTP, clock, environment and the terminal.

Each function does one effect and asks ``core`` for every decision.
"""
