"""External agents: their configuration, their presets' invocations, and reading their model calls (pure)."""
