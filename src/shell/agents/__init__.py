"""External agents: the per-run recording proxy, the runner that starts an agent's CLI, and their checks."""
