"""The lab's statistics, for use as a library: ``from alisio.core.stats import wilson_interval``.

The same names, the same objects, as ``alisio.core.lab.stats`` (where they live, beside the lab that uses them):
Wilson intervals, pass@k and pass^k (observed and unbiased), medians, variances and the task-clustered suite
mean.
"""

from __future__ import annotations

from alisio.core.lab.stats import *  # noqa: F403 (this module is the short name of that one's public API)
from alisio.core.lab.stats import __all__ as __all__
