"""Properties of core.harness.endpoint: no credential of a URL survives, and the endpoint is canonical."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.endpoint import REDACTED, endpoint_of, redact_credentials
from alisio.core.share.secrets import scan

_WORD = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&*+,;=%",
    min_size=1,
    max_size=20,
)
_HOST = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5}){0,2}", fullmatch=True)


@given(
    user=_WORD,
    password=_WORD,
    host=_HOST,
    port=st.integers(1, 65535) | st.none(),
    around=st.text(max_size=20),
)
def test_no_user_or_password_survives_redaction(
    user: str, password: str, host: str, port: int | None, around: str
) -> None:
    """Neither the user nor the password of ``scheme://user:pass@host`` is left in the redacted text."""
    where = host if port is None else f"{host}:{port}"
    url = f"http://{user}:{password}@{where}/v1"
    redacted = redact_credentials(f"{around} {url} {around}")
    assert f"{user}:{password}@" not in redacted
    assert f"http://{REDACTED}@{where}/v1" in redacted
    assert f"{user}:{password}@" not in endpoint_of(url)
    assert "@" not in endpoint_of(url)


@given(user=_WORD.filter(lambda w: ":" not in w), password=_WORD, host=_HOST)
def test_the_secret_scanner_flags_a_url_with_a_password(user: str, password: str, host: str) -> None:
    """A URL with a password in a bundle is a secret hit (``url-credentials``), never its value."""
    hits = scan({"error": f"cannot reach https://{user}:{password}@{host}/v1"}, ())
    assert [hit.kind for hit in hits] == ["url-credentials"]
    assert hits[0].path == "error"  # the hit names the field, never the value


def test_endpoint_examples() -> None:
    """Scheme, host, port (the default when absent) and path; no query, fragment or trailing slash."""
    assert endpoint_of("http://localhost/v1") == "http://localhost:80/v1"
    assert endpoint_of("http://localhost:80/v1/") == "http://localhost:80/v1"
    assert endpoint_of("HTTPS://user:pw@API.example.com/v1?x=1#y") == "https://api.example.com:443/v1"
    assert endpoint_of("http://[::1]:8080/v1") == "http://[::1]:8080/v1"
    assert endpoint_of("not a url") == "not a url"
    assert endpoint_of("http://u:p@h:badport/v1") == f"http://{REDACTED}@h:badport/v1"


def test_plain_urls_are_left_alone() -> None:
    """A URL without user information is not changed, and the scanner does not flag it."""
    text = "see https://example.com/a@b and ssh://git@host/repo"
    assert redact_credentials("see https://example.com/a@b") == "see https://example.com/a@b"
    assert scan({"t": text}, ()) == ()
