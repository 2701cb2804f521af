"""A preset's key goes only to the preset's own origin: same scheme, host and port."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.presets import PRESETS, key_host_refusal

_KEYED = sorted(name for name, preset in PRESETS.items() if preset.key_env is not None)


@given(st.sampled_from(_KEYED))
def test_the_presets_own_url_may_have_its_key(name: str) -> None:
    """The preset's base URL, and the same origin with its default port written, take the key."""
    base = PRESETS[name].base_url
    assert key_host_refusal(name, base) is None  # type: ignore[arg-type]
    assert (
        key_host_refusal(name, base.replace(".ai/", ".ai:443/", 1).replace(".com/", ".com:443/", 1)) is None
    )  # type: ignore[arg-type]


@given(st.sampled_from(_KEYED), st.sampled_from(["http", "https-other-port", "other-host"]))
def test_another_scheme_port_or_host_is_refused_naming_the_variable(name: str, change: str) -> None:
    """Plain HTTP to the preset's host, another port or another host: refused, naming the key variable."""
    base = PRESETS[name].base_url
    changed = {
        "http": base.replace("https://", "http://", 1),
        "https-other-port": base.replace(".ai/", ".ai:8443/", 1).replace(".com/", ".com:8443/", 1),
        "other-host": "https://gateway.example/v1",
    }[change]
    refusal = key_host_refusal(name, changed)  # type: ignore[arg-type]
    assert refusal is not None and str(PRESETS[name].key_env) in refusal
