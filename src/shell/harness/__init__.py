"""The harness's effects: the agent loop (``agent``), the providers it calls and the tools it runs."""
