"""The statistics of the non-inferiority gate of ``alisio eval compare --fail-on worse-than:M``: fail unless the data show, for
every task that can get a verdict, that the candidate is at most M worse than the baseline.

Rules this module keeps:

- Per task the null is "the candidate is worse by M or more", H0: pc − pb <= −M, against pc − pb > −M. The
  statistic is the Wald z of the difference shifted by M, with each rate smoothed by half a pass so no table has
  zero variance: z = (p̃c − p̃b + M)/sqrt(p̃b·q̃b/nb + p̃c·q̃c/nc), p̃ = (x + 0.5)/(n + 1). The exact unconditional
  p-value is the largest probability of a table at least as large as the observed z over the null region
  {(pb, pc): pc <= pb − M}, taken over ``BOUNDARY`` points of the boundary pc = pb − M (where the supremum of a
  statistic monotone in both counts lies) and a ``GRID`` x ``GRID`` grid inside the region as a check. Above ``CELL_BUDGET`` tables the
  one-sided normal p-value of the same z is used and labelled.
- The p-values of the tasks in the comparison's family (comparable, at least 5 judged runs per side) are
  adjusted across that family with the comparison's adjustment (Holm or Benjamini-Hochberg), as the
  difference tests are. A task with adjusted p < 0.05 is shown non-inferior; any other task of the family
  hits the gate. Tasks outside the family are not gated (they are counted, never passed silently). The gate
  itself, and the parsing of ``worse-than:M``, are ``alisio.core.lab.comparisons.gate``'s.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "BOUNDARY",
    "CELL_BUDGET",
    "GRID",
    "noninferiority_p",
]

GRID = 21
"""Grid points per rate over the inside of the null region."""
BOUNDARY = 2001
"""Grid points on the boundary pc = pb − M, where the supremum lies for a statistic monotone in both counts."""
CELL_BUDGET = 250_000
"""Largest (nb + 1)·(nc + 1) for the exact test; above, the normal p-value of the same statistic."""


def _z(a: NDArray[Any], nb: int, c: NDArray[Any], nc: int, margin: float) -> NDArray[Any]:
    import numpy as np

    pb, pc = (a + 0.5) / (nb + 1), (c + 0.5) / (nc + 1)
    out: NDArray[Any] = (pc - pb + margin) / np.sqrt(pb * (1 - pb) / nb + pc * (1 - pc) / nc)
    return out


def _binomials(n: int, rates: NDArray[Any]) -> NDArray[Any]:
    """Bin(x; n, π) for every rate (rows) and x = 0..n (columns)."""
    import numpy as np

    x = np.arange(n + 1)
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.where(x > 0, x * np.log(rates[:, None]), 0.0)
        log_q = np.where(x < n, (n - x) * np.log1p(-rates[:, None]), 0.0)
    out: NDArray[Any] = np.exp(log_fact[n] - log_fact[x] - log_fact[n - x] + log_p + log_q)
    return out


def noninferiority_p(xb: int, nb: int, xc: int, nc: int, margin: float) -> tuple[float, str] | None:
    """One-sided p-value of H0 "candidate worse by ``margin`` or more" and its method (module docstring).

    Returns:
        (p-value, ``exact`` or ``normal``), or ``None`` when a side has no judged runs.
    """
    import numpy as np

    if nb == 0 or nc == 0:
        return None
    observed = float(_z(np.array(xb), nb, np.array(xc), nc, margin))
    if (nb + 1) * (nc + 1) > CELL_BUDGET:
        return max(1e-300, 1.0 - NormalDist().cdf(observed)), "normal"
    a, c = np.meshgrid(np.arange(nb + 1), np.arange(nc + 1), indexing="ij")
    region = (_z(a, nb, c, nc, margin) >= observed - 1e-12).astype(np.float64)
    inner = np.linspace(margin, 1.0, GRID)
    pbs = np.repeat(inner, GRID)
    pcs = np.concatenate([np.linspace(0.0, pb - margin, GRID) for pb in inner])
    boundary = np.linspace(margin, 1.0, BOUNDARY)
    pbs, pcs = np.concatenate((pbs, boundary)), np.clip(np.concatenate((pcs, boundary - margin)), 0.0, 1.0)
    tails = ((_binomials(nb, pbs) @ region) * _binomials(nc, pcs)).sum(axis=1)
    return min(1.0, float(tails.max())), "exact"
