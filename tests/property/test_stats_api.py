"""``alisio.core.stats`` is the kernel's one public surface: its examples hold and it names every kernel module's
public functions and types it documents."""

from __future__ import annotations

import doctest

import alisio.core.stats


def test_the_examples_of_the_package_hold() -> None:
    results = doctest.testmod(alisio.core.stats, optionflags=doctest.ELLIPSIS)
    assert results.attempted >= 9
    assert results.failed == 0


def test_every_name_of_the_package_is_the_kernel_modules_object() -> None:
    from alisio.core.stats import exact, rates

    assert alisio.core.stats.wilson_interval is rates.wilson_interval
    assert alisio.core.stats.boschloo_p is exact.boschloo_p
    assert all(hasattr(alisio.core.stats, name) for name in alisio.core.stats.__all__)
