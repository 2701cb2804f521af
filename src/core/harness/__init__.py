"""The harness's pure rules: the agent loop's decisions, budgets, compaction, the policy, the provider wire
format and protocol, the tools as data and their pure rules, the configuration and the event log."""
