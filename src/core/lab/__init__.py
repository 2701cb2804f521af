"""The Reliability Lab's pure rules, in rooms: ``runs`` (a run's record, transcript and kept workspace),
``reports`` (report.json, its blocks and checks), ``suites`` (the suite model and the run plan), ``judges``
(verifiers, a run's outcome, rejudging), ``comparisons`` (compare, the gates, variants, stability, eval power),
``plans`` (plan.json, shards, merge, reuse, the estimate, the sequential plan), ``sources`` (export bundles,
other harnesses' results), ``trajectories`` (a run's tool calls aligned) and ``outputs`` (every renderer). The
statistics kernel, the sequential tests included, is ``alisio.core.stats``."""
