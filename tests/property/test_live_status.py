"""Properties of the live status words: retry notices read back, the soonest wait shown, lines fitted."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.outputs.live_status import fit_line, retry_wait, status_extras


@given(
    st.sampled_from([(429, "rate-limited"), (503, "server error"), (408, "timed out")]), st.integers(0, 600)
)
def test_a_retry_notice_reads_back(status: tuple[int, str], tenths: int) -> None:
    """The provider's notice ``HTTP 429 from URL: ...; retry 1 of 4 in 2.0 s`` gives what and how long."""
    code, what = status
    notice = f"HTTP {code} from http://127.0.0.1:1/v1: slow down; retry 1 of 4 in {tenths / 10:.1f} s"
    assert retry_wait(notice) == (what, tenths / 10)
    assert retry_wait("connection refused; retry 2 of 4 in 1.0 s") == ("connection error", 1.0)
    assert retry_wait("HTTP 429 from x: slow down") is None


@given(st.lists(st.tuples(st.sampled_from(["rate-limited", "server error"]), st.floats(0, 60)), max_size=5),
       st.integers(0, 50), st.none() | st.integers(0, 10**9))  # fmt: skip
def test_the_extras_name_the_soonest_wait_the_retries_and_the_tokens(
    waits: list[tuple[str, float]], retries: int, tokens: int | None
) -> None:
    """Each part appears exactly when it has something to say; the soonest wait is the one shown."""
    text = status_extras(waits, retries, tokens)
    if waits:
        what, left = min(waits, key=lambda w: w[1])
        assert f" · {what}, retrying in {round(left)} s" in text
    else:
        assert "retrying" not in text
    assert (f" · {retries} retr" in text) == (retries > 0)
    assert ("tokens" in text) == (tokens is not None)
    if tokens is not None:
        assert text.endswith(f" · {tokens:,} tokens")


@given(st.integers(0, 10**9), st.floats(0, 1e6, allow_nan=False))
def test_the_cost_follows_the_tokens_when_priced(tokens: int, cost: float) -> None:
    """With rates the running cost comes last, in USD to 4 decimals; without them there is none."""
    assert status_extras([], 0, tokens, cost) == f" · {tokens:,} tokens · {cost:,.4f} USD"
    assert "USD" not in status_extras([], 0, tokens, None)


def test_plurals() -> None:
    """One retry, several retries; several runs waiting are counted."""
    assert status_extras([], 1, None) == " · 1 retry so far"
    assert status_extras([("rate-limited", 2.2), ("rate-limited", 1.6)], 3, 0) == (
        " · rate-limited, retrying in 2 s (2 runs waiting) · 3 retries so far · 0 tokens"
    )


@given(st.text(max_size=300), st.integers(2, 200))
def test_a_fitted_line_fits_and_keeps_its_start(line: str, width: int) -> None:
    """A cut line is exactly the width, ends with an ellipsis and starts as the line did."""
    fitted = fit_line(line, width)
    assert len(fitted) <= max(width, 0)
    if len(line) > width:
        assert fitted.endswith("…") and line.startswith(fitted[:-1])
    else:
        assert fitted == line
