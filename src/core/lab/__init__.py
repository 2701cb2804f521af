"""The Reliability Lab's pure rules: run records, reports and their checks, transcripts and plan.json here, and
four rooms: ``suites`` (the suite model and the run plan), ``judges`` (verifiers, a run's outcome),
``comparisons`` (compare, the gates, variants, stability, eval power) and ``outputs`` (every renderer). The
statistics kernel is ``alisio.core.stats``."""
