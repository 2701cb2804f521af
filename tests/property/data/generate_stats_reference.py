"""Generate stats_reference.json: reference values for the statistics kernel, computed once with scipy and
statsmodels (neither is a dependency of alisio; install them in a scratch venv to regenerate).

    .venv/bin/pip install scipy statsmodels
    .venv/bin/python tests/property/data/generate_stats_reference.py > tests/property/data/stats_reference.json

Generated with scipy 1.17.1, statsmodels 0.15.0 and numpy 2.4.6. The differences are candidate - baseline and
every test's table has one column per side (scipy's convention for boschloo_exact).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import scipy
import statsmodels
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, samplesize_proportions_2indep_onetail

# (baseline passes, baseline judged, candidate passes, candidate judged)
PAIRS = [
    (10, 10, 6, 10),
    (3, 10, 9, 10),
    (0, 5, 5, 5),
    (5, 5, 0, 5),
    (48, 80, 56, 70),
    (1, 5, 4, 5),
    (0, 29, 5, 56),
    (0, 20, 0, 10),
    (0, 10, 0, 10),
    (0, 20, 10, 10),
    (3, 5, 3, 5),
    (30, 50, 40, 50),
    (2, 7, 6, 7),
    (7, 10, 6, 8),
    (1, 10, 9, 10),
    (6, 10, 7, 10),
    (4, 10, 6, 10),
    (8, 10, 9, 10),
    (100, 200, 120, 200),
    (150, 200, 90, 120),
    (12, 30, 25, 31),
    (0, 1, 1, 1),
    (1, 2, 0, 3),
    (17, 40, 5, 9),
]
P_VECTORS = [
    [0.0422, 0.0422, 1.0],
    [0.0331, 0.0331, 1.0],
    [0.01, 0.04, 0.03, 0.005],
    [0.001, 0.01, 0.02, 0.03, 0.04],
    [0.02, 0.02, 0.02],
    [1.0],
    [0.5, 0.2, 0.9, 0.04, 0.001, 0.3, 0.3],
    [0.0, 1.0, 0.05],
]
RATE_VECTORS = [[0.6, 1.0, 0.0, 0.4], [0.2, 0.4], [1.0, 0.9, 0.8, 0.9, 0.7, 0.95], [0.1, 0.5, 0.3]]
DIFF_VECTORS = [[-0.4, 0.4, 0.0], [0.4, 0.0, 0.2, 0.4], [0.1, 0.2, -0.1, 0.3, 0.0, 0.2, 0.1, -0.2]]
POWER = [
    (0.5, 0.8),
    (0.2, 0.8),
    (0.5, 0.9),
    (0.6, 0.9),
    (0.7, 0.8),
    (0.3, 0.7),
    (0.0, 0.5),
    (0.5, 1.0),
    (0.7, 0.73),
    (0.5, 0.6),
    (0.9, 1.0),
    (0.6, 0.4),
]


def newcombe(b: int, bn: int, c: int, cn: int) -> list[float]:
    low, high = confint_proportions_2indep(c, cn, b, bn, method="newcomb", compare="diff", alpha=0.05)
    return [float(low), float(high)]


def sign_flip(diffs: list[float]) -> float:
    result = stats.permutation_test(
        (np.array(diffs),), np.mean, permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
    )
    return float(result.pvalue)


def main() -> None:
    data = {
        "generated_with": {"scipy": scipy.__version__, "statsmodels": statsmodels.__version__},
        "pairs": [
            {
                "counts": list(pair),
                "newcombe": newcombe(*pair),
                "boschloo": float(
                    stats.boschloo_exact([[pair[0], pair[2]], [pair[1] - pair[0], pair[3] - pair[2]]]).pvalue
                ),
            }
            for pair in PAIRS
        ],
        "adjust": [
            {
                "p": ps,
                "holm": [float(v) for v in multipletests(ps, method="holm")[1]],
                "bh": [float(v) for v in multipletests(ps, method="fdr_bh")[1]],
            }
            for ps in P_VECTORS
        ],
        "t_quantiles": [
            {"prob": prob, "df": df, "value": float(stats.t.ppf(prob, df))}
            for df in [*range(1, 41), 60, 100, 250, 1000]
            for prob in (0.975, 0.8, 0.9, 0.995)
        ],
        "t_intervals": [
            {
                "values": values,
                "interval": [
                    float(v)
                    for v in stats.t.interval(0.95, len(values) - 1, np.mean(values), stats.sem(values))
                ],
            }
            for values in RATE_VECTORS + DIFF_VECTORS
        ],
        "sign_flip": [{"diffs": diffs, "p": sign_flip(diffs)} for diffs in DIFF_VECTORS],
        "runs_per_side": [
            {
                "p1": p1,
                "p2": p2,
                "n": float(
                    samplesize_proportions_2indep_onetail(
                        diff=p2 - p1, prop2=p1, power=0.8, alpha=0.05, alternative="two-sided"
                    )
                ),
            }
            for p1, p2 in POWER
        ],
    }
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
