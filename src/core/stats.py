"""The lab's statistics, for use as a library: ``from alisio.core.stats import wilson_interval``.

The same functions as ``alisio.core.lab.stats`` (where they live, beside the lab that uses them): Wilson
intervals, pass@k and pass^k (observed and unbiased), medians, variances and the task-clustered suite mean.
"""

from __future__ import annotations

from alisio.core.lab.stats import (
    Z95,
    ClusteredMean,
    Interval,
    IntervalMethod,
    median,
    pass_at_k,
    pass_at_k_estimate,
    pass_hat_k,
    pass_hat_k_estimate,
    sample_variance,
    suite_rate,
    t_quantile,
    task_clustered_mean,
    wilson_bounds,
    wilson_interval,
)

__all__ = [
    "Z95",
    "ClusteredMean",
    "Interval",
    "IntervalMethod",
    "median",
    "pass_at_k",
    "pass_at_k_estimate",
    "pass_hat_k",
    "pass_hat_k_estimate",
    "sample_variance",
    "suite_rate",
    "t_quantile",
    "task_clustered_mean",
    "wilson_bounds",
    "wilson_interval",
]
