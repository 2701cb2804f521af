"""Hypothesis strategies for ``alisio.core.harness.sandbox``: limits, host roots, commands."""

from __future__ import annotations

from hypothesis import strategies as st

from alisio.core.harness.sandbox import BIND_ROOTS, RootEntry, SandboxLimits

sandbox_limits = st.builds(
    SandboxLimits,
    max_processes=st.integers(16, 1 << 20),
    max_file_bytes=st.integers(1 << 20, 1 << 50),
    max_memory_bytes=st.integers(1 << 20, 1 << 50),
    tmp_bytes=st.integers(1 << 20, 1 << 50),
)

_extra_roots = st.lists(
    st.sampled_from([p for p in BIND_ROOTS if p not in ("/usr", "/etc")]), unique=True
).flatmap(
    lambda paths: st.tuples(
        *(st.builds(RootEntry, path=st.just(p), link=st.none() | st.just("usr" + p)) for p in paths)
    )
)
roots = _extra_roots.map(lambda extra: (RootEntry(path="/usr"), RootEntry(path="/etc"), *extra))
"""``/usr`` and ``/etc`` always, the other entries of ``BIND_ROOTS`` as directories or links, or absent."""

commands = st.lists(st.text(min_size=1, max_size=30).filter(lambda s: "\0" not in s), min_size=1, max_size=5)
"""Any argv, including words that look like bwrap's or prlimit's own options (``--bind``, ``--``)."""
