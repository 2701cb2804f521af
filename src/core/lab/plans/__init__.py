"""The plan and what it makes possible: plan.json (resume), shards and their merge, the plan digest, reused runs,
``--dry-run``'s estimate, and the sequential commands' plan and looks."""
