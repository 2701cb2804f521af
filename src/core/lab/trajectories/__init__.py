"""Trajectories: a run's tool calls read off its event log, two of them aligned and their first sustained
divergence named (``eval diff``), and the repetitions of one task grouped by the calls they made."""
