"""Properties of alisio.core.share.secrets: shapes and credentials are found at their path, values never shown, few false hits."""

from __future__ import annotations

import base64
import hashlib
import uuid

import msgspec
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.lab.runs.records import Measured, RunRecord, RunStatus, VerifierResult, VerifierStatus
from alisio.core.share.secrets import SecretHit, describe, known_credentials, scan
from tests.property.strategies_secrets import (
    SHAPES,
    json_like,
    safe_text,
    shaped_secrets,
    with_leaf,
)

CREDENTIAL = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=8, max_size=24)


@given(shaped_secrets.flatmap(lambda ks: st.tuples(st.just(ks), with_leaf(ks[1]))))
def test_a_shaped_secret_anywhere_is_found_at_exactly_its_path(
    case: tuple[tuple[str, str], tuple[object, str]],
) -> None:
    """A key-shaped secret put anywhere in safe JSON-like data gives exactly one hit: its path and its kind."""
    (kind, _secret), (data, path) = case
    assert scan(data, ()) == (SecretHit(path=path, kind=kind),)


@given(CREDENTIAL.flatmap(lambda value: st.tuples(st.just(value), with_leaf(value))))
def test_a_known_credential_anywhere_is_found_at_exactly_its_path(
    case: tuple[str, tuple[object, str]],
) -> None:
    """An exact credential value, embedded in a longer string anywhere, is found at its path by name."""
    value, (data, path) = case
    known = (("MY_SERVICE_TOKEN", value),)
    assert scan(data, known) == (SecretHit(path=path, kind="credential MY_SERVICE_TOKEN"),)


@given(shaped_secrets, st.data())
def test_scanning_never_returns_the_value(kind_secret: tuple[str, str], data: st.DataObject) -> None:
    """No hit, its path, kind or message holds the secret, also when the secret is a dict key."""
    kind, secret = kind_secret
    value = data.draw(st.sampled_from(({secret: {"a": secret}}, [secret], {"x": [1, secret]})))
    hits = scan(value, (("MY_TOKEN", secret),)) + scan(value, ())
    assert {hit.kind for hit in hits} == {"credential MY_TOKEN", kind}
    for hit in hits:
        shown = f"{hit.path} {hit.kind} {hit} {msgspec.json.encode(hit).decode()}"
        assert secret not in shown and secret[:12] not in shown


@given(json_like)
def test_safe_data_is_never_flagged(data: object) -> None:
    """Data whose text comes from a safe alphabet (no secret shape possible) gives no hit."""
    assert scan(data, (("MY_TOKEN", "ABCDEFGHIJKL"),)) == ()


@given(st.binary(max_size=48), safe_text)
def test_digests_uuids_base64_and_paths_are_not_flagged(raw: bytes, text: str) -> None:
    """sha256 hex digests, UUIDs, base64 of short text and file paths are ordinary report content."""
    values = [
        hashlib.sha256(raw).hexdigest(),
        f"sha256:{hashlib.sha256(raw).hexdigest()}",
        str(uuid.UUID(bytes=hashlib.md5(raw).digest())),
        base64.b64encode(text.encode()).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        f"/home/jane/.local/state/alisio/eval/2026-10-13T12-00-00-000Z/{text}",
        "/tmp/alisio-fix-add-k3j_x9q/src/calc.py",
        "C:\\Users\\jane\\AppData\\Local\\Temp\\alisio-task_1",
    ]
    assert scan(values, ()) == ()


@pytest.mark.parametrize(
    "text",
    [
        "The task-based sk-learn style naming convention is described here",
        "disk-usage-report-for-all-the-volumes-2024",
        "task-abcdefghijklmnopqrstuvwxyz0123",
        "Bearer token authentication is required for every request",
        "Authorization: Bearer $OPENAI_API_KEY",
        "Authorization: Bearer ***",
        "assert add(2, 3) == 5\nAssertionError: expected 5, got -1 (tests/test_calc.py:12)",
        "hf_hub_download_cache_directory_and_more",
        "AKIA is an AWS prefix",
        "-----BEGIN PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----",
        "eyJhbGciOiJIUzI1NiJ9 is the base64 of a JOSE header",
        "openai/gpt-5-mini via https://api.openai.com/v1 at 3/5 passes",
        "ghp_short",
    ],
)
def test_ordinary_text_is_not_flagged(text: str) -> None:
    """Prose, test output, prefixes without a key body and public key blocks are not secrets."""
    assert scan({"detail": text}, ()) == ()


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "openai-key"),
        ("sk-proj-" + "abcdefghij" * 4, "openai-key"),
        ("sk-svcacct-" + "AbcdEfghIj" * 3, "openai-key"),
        ("sk-admin-" + "abcdefghij" * 3, "openai-key"),
        ("sk-abcdefghijklmnopqrstuvwxyzABCDEF0123456789ab", "openai-key"),
        ("sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1w", "anthropic-key"),
        ("sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef", "openrouter-key"),
        ("sk-0123456789abcdef0123456789abcdef", "deepseek-key"),
        ("gsk_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "groq-key"),
        ("xai-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "xai-key"),
        ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "google-api-key"),
        ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
        ("ASIAIOSFODNN7EXAMPLE", "aws-access-key"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-key"),
        ('"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', "aws-secret-key"),
        ("ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d", "github-token"),
        ("gho_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d", "github-token"),
        ("ghs_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d", "github-token"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github-token"),
        ("xoxb-1234567890-0987654321-Ab3dEf6hIj9kLm2n", "slack-token"),
        ("xoxp-1234567890-0987654321-Ab3dEf6hIj9kLm2n", "slack-token"),
        ("hf_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb", "huggingface-token"),
        ("sk_live_Ab3dEf6hIj9kLm2nOp5qRs8t", "stripe-key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n", "private-key-block"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "private-key-block"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
        ),
        ("curl -H 'Authorization: Bearer abcdef0123456789abcdef' https://x", "bearer-credential"),
    ],
)
def test_each_known_shape_is_named(text: str, kind: str) -> None:
    """Each well-known key shape, embedded in a sentence, gives one hit of its kind."""
    assert scan({"detail": f"output: {text} (end)"}, ()) == (SecretHit(path="detail", kind=kind),)


def test_a_bearer_openai_key_is_one_hit_named_by_its_shape() -> None:
    """Overlapping rules give one hit: the most specific one (the key shape, not the Bearer header)."""
    text = "Authorization: Bearer sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    assert scan([text], ()) == (SecretHit(path="[0]", kind="openai-key"),)


def test_an_environment_credential_is_named_before_its_shape() -> None:
    """A value that is both a known credential and key-shaped is reported as the credential."""
    key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    hits = scan({"a": [f"x{key}y"]}, (("OPENAI_API_KEY", key),))
    assert hits == (SecretHit(path="a[0]", kind="credential OPENAI_API_KEY"),)
    assert str(hits[0]) == "a[0]: holds the value of OPENAI_API_KEY"


def test_paths_follow_the_spec_style_on_a_struct() -> None:
    """A Struct is scanned by its wire names: ``runs[1].verifiers[0].detail``-style paths."""
    measured = Measured(wall_ms=1, turns=1, tool_calls=0, compactions=0, usage_complete=False)
    clean = RunRecord(task_id="t", repetition=0, seed=0, status=RunStatus.PASS, measured=measured)
    leaky = msgspec.structs.replace(
        clean,
        verifiers=(
            VerifierResult(
                id="check",
                kind="command",
                status=VerifierStatus.FAIL,
                detail="stdout: sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
            ),
        ),
    )
    hits = scan({"runs": [clean, leaky], "report": {"conditions": {"provider": "AKIAIOSFODNN7EXAMPLE"}}}, ())
    assert [str(h) for h in hits] == [
        "runs[1].verifiers[0].detail: looks like an OpenAI key",
        "report.conditions.provider: looks like an AWS access key id",
    ]
    assert scan(leaky, (), root="runs[4]")[0].path == "runs[4].verifiers[0].detail"


def test_known_credentials_follow_the_documented_rule() -> None:
    """Names with a credential word and values of 8+ characters that are not paths, URLs or numbers."""
    env = {
        "OPENAI_API_KEY": "sk-proj-abc",
        "MY_SERVICE_TOKEN": "abcd1234efgh",
        "DB_PASSWORD": "hunter22",
        "db_passwd": "hunter2",  # too short
        "GITHUB_AUTH": "s3cr3t-value",
        "GIT_AUTHOR_NAME": "Jane Doe Smith",
        "XAUTHORITY": "/run/user/1000/gdm/Xauthority",
        "SSH_AUTH_SOCK": "/run/user/1000/keyring/ssh",
        "GOOGLE_APPLICATION_CREDENTIALS": "/home/jane/gcp.json",
        "AUTH_URL": "https://auth.example.com/login",
        "PROXY_AUTH": "https://user:pass@proxy.example.com",
        "MAX_TOKENS": "100000000",
        "TOKENIZERS_PARALLELISM": "false",
        "HOME": "/home/jane",
        "CUSTOM_LLM": "plain-name-but-configured",
        "TWIN_SECRET": "abcd1234efgh",
    }
    assert known_credentials(env, extra_names=("CUSTOM_LLM",)) == (
        ("CUSTOM_LLM", "plain-name-but-configured"),
        ("DB_PASSWORD", "hunter22"),
        ("GITHUB_AUTH", "s3cr3t-value"),
        ("MY_SERVICE_TOKEN", "abcd1234efgh"),
        ("OPENAI_API_KEY", "sk-proj-abc"),
        ("PROXY_AUTH", "https://user:pass@proxy.example.com"),
    )


@given(
    st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=8), st.lists(st.text(max_size=12))
)
@example({"A_KEY": "1234567", "B_KEY": "12345678"}, [])
def test_known_credentials_are_long_values_of_env(env: dict[str, str], extra: list[str]) -> None:
    """Every credential is an env pair with a value of 8+ characters, each value once, sorted by name."""
    found = known_credentials(env, extra)
    assert all(env[name] == value and len(value) >= 8 for name, value in found)
    assert len({value for _, value in found}) == len(found)
    assert [name for name, _ in found] == sorted(name for name, _ in found)


def test_describe_names_the_kind_in_words() -> None:
    """Messages say what a hit looks like, never what it is."""
    assert describe("openai-key") == "looks like an OpenAI key"
    assert describe("credential MY_TOKEN") == "holds the value of MY_TOKEN"
    assert all(describe(kind).startswith("looks like a") for kind in SHAPES)
