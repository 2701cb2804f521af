"""The statistics kernel, pure, for use as a library: ``from alisio.core.stats import wilson_interval``.

The lab's numbers come from here; the package imports nothing of the lab (import-linter keeps it so), so any
reporting can reuse it:

- ``rates``: Wilson intervals, pass@k and pass^k (observed and unbiased), medians, variances, the t quantile
  and the task-clustered suite mean;
- ``exact``: Newcombe's interval of a difference, Boschloo's exact test, Holm and Benjamini-Hochberg;
- ``inverted``: the intervals of a difference that invert those tests (Boschloo's, and the pooled z test's);
- ``paired``: the paired suite difference and its stratified permutation p-value;
- ``power``: runs a comparison needs and the smallest change it can detect;
- ``verdict``: the per-task verdict;
- ``noninferiority``: the p-value of the non-inferiority gate;
- ``reliability``: where the noise lies (the ICC of the pass indicator and the design effect), the consistency
  of repetitions (coefficient of variation, tool-call sequence similarity), cost per success with Fieller's
  interval, and the arms no other beats on both rate and cost;
- ``sequential``: anytime-valid sequential tests (``eval variants --sequential``, ``eval run --sequential
  --baseline``, ``eval run --until-width``), on the betting e-processes of ``betting`` and the decisions of
  ``sequential_kernel``.

Examples:

>>> wilson_interval(3, 5)
Interval(low=0.2307242812760129, high=0.8823792257673522)
>>> wilson_interval(10, 10).high
1.0
>>> wilson_interval(0, 0) is None
True
>>> pass_at_k_estimate(10, 5, 5)
0.996031746031746
>>> pass_hat_k_estimate(10, 5, 5)
0.003968253968253968
>>> newcombe_interval(10, 10, 6, 10)
Interval(low=-0.6873262302663417, high=-0.03838582088800241)
>>> round(boschloo_p(10, 10, 6, 10), 4)
0.0422
>>> holm_adjust([0.0331, 0.0331, 1])
(0.0993, 0.0993, 1.0)
>>> round(runs_per_side(0.5, 0.1), 2)
387.34
>>> round(icc_binary([(5, 5), (0, 5), (4, 5), (1, 5)]).icc, 3)
0.674
>>> sequence_similarity(["read_file", "edit_file"], ["read_file", "run", "edit_file"])
0.8
>>> stop = two_arm(SequentialDesign(alpha=0.05, tasks=1, max_k=100), [False] * 20, [True] * 20)
>>> stop.reason, stop.direction, stop.runs
('decided', 'improved', 20)
"""

from __future__ import annotations

from alisio.core.stats.exact import (
    PValueMethod,
    bh_adjust,
    boschloo_p,
    boschloo_regions,
    difference_p,
    holm_adjust,
    newcombe_interval,
    pooled_z_p,
)
from alisio.core.stats.inverted import boschloo_interval, difference_interval, score_interval
from alisio.core.stats.noninferiority import noninferiority_p
from alisio.core.stats.paired import (
    PairedDifference,
    PermutationMethod,
    paired_difference,
    sign_flip_p,
    stratified_permutation_p,
)
from alisio.core.stats.power import (
    boschloo_power,
    candidate_rate,
    min_detectable_difference,
    paired_min_detectable,
    power_two_proportions,
    runs_per_side,
    runs_per_task,
)
from alisio.core.stats.rates import (
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
from alisio.core.stats.reliability import (
    DOUBLED_TASKS_NARROWER,
    IccEstimate,
    RatioEstimate,
    coefficient_of_variation,
    f_quantile,
    icc_binary,
    lcs_length,
    mean_pairwise_similarity,
    non_dominated,
    ratio_estimate,
    sequence_similarity,
)
from alisio.core.stats.sequential import (
    FUTILITY,
    MAX_K,
    Direction,
    Kind,
    Reason,
    SequentialDesign,
    SequentialSide,
    SequentialStop,
    against_baseline,
    baseline_futility_probability,
    crosses,
    design_problem,
    futility_probability,
    method_note,
    scan_pairs,
    scan_width,
    threshold,
    two_arm,
    until_width,
    width_problem,
)
from alisio.core.stats.verdict import (
    ALPHA,
    MIN_JUDGED,
    Adjustment,
    Side,
    TaskVerdict,
    Verdict,
    VerdictRule,
    compare_intervals,
    exact_verdict,
    task_verdict,
)

__all__ = [
    "ALPHA",
    "DOUBLED_TASKS_NARROWER",
    "FUTILITY",
    "MAX_K",
    "MIN_JUDGED",
    "Z95",
    "Adjustment",
    "ClusteredMean",
    "Direction",
    "IccEstimate",
    "Interval",
    "IntervalMethod",
    "Kind",
    "PValueMethod",
    "PairedDifference",
    "PermutationMethod",
    "RatioEstimate",
    "Reason",
    "SequentialDesign",
    "SequentialSide",
    "SequentialStop",
    "Side",
    "TaskVerdict",
    "Verdict",
    "VerdictRule",
    "against_baseline",
    "baseline_futility_probability",
    "bh_adjust",
    "boschloo_interval",
    "boschloo_p",
    "boschloo_power",
    "boschloo_regions",
    "candidate_rate",
    "coefficient_of_variation",
    "compare_intervals",
    "crosses",
    "design_problem",
    "difference_interval",
    "difference_p",
    "exact_verdict",
    "f_quantile",
    "futility_probability",
    "holm_adjust",
    "icc_binary",
    "lcs_length",
    "mean_pairwise_similarity",
    "median",
    "method_note",
    "min_detectable_difference",
    "newcombe_interval",
    "non_dominated",
    "noninferiority_p",
    "paired_difference",
    "paired_min_detectable",
    "pass_at_k",
    "pass_at_k_estimate",
    "pass_hat_k",
    "pass_hat_k_estimate",
    "pooled_z_p",
    "power_two_proportions",
    "ratio_estimate",
    "runs_per_side",
    "runs_per_task",
    "sample_variance",
    "scan_pairs",
    "scan_width",
    "score_interval",
    "sequence_similarity",
    "sign_flip_p",
    "stratified_permutation_p",
    "suite_rate",
    "t_quantile",
    "task_clustered_mean",
    "task_verdict",
    "threshold",
    "two_arm",
    "until_width",
    "width_problem",
    "wilson_bounds",
    "wilson_interval",
]
