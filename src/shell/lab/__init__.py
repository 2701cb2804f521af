"""The Reliability Lab's effects: one pipeline (``pipeline.run_request``) from a ``LabRequest`` to reports:
suite choice and preflight, provider plans, the report directory, the run loop and its executors, one run
(workspace, agent, verifiers), resume, stored runs and export."""
