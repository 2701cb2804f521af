"""Properties of alisio.core.harness.policy, checked exhaustively: the input space is small enough to enumerate.

Every effect x mode x allow subset x readOnly x granted subset x session-grant subset (5 x 3 x 32 x 2 x 32 x
32 = 983,040 combinations) is decided; each test enumerates one slice of it.
"""

from __future__ import annotations

from itertools import chain, combinations, product

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.events import Effect
from alisio.core.harness.policy import (
    ALL_EFFECTS,
    GRANT_FLAGS,
    Allow,
    Ask,
    Decision,
    Deny,
    DenyReason,
    Policy,
    PolicyError,
    PolicyMode,
    check_task_policy,
    decide,
    denial_message,
    needed_effects,
)

SUBSETS: tuple[frozenset[Effect], ...] = tuple(
    frozenset(c) for c in chain.from_iterable(combinations(tuple(Effect), r) for r in range(len(Effect) + 1))
)
"""All 32 subsets of the five effects."""

_RANK = {Deny: 0, Ask: 1, Allow: 2}


def _rank(decision: Decision) -> int:
    return _RANK[type(decision)]


def test_subsets_are_all_of_them() -> None:
    """The enumeration covers every subset of effects exactly once."""
    assert len(SUBSETS) == 2 ** len(Effect) == len(set(SUBSETS))


@pytest.mark.parametrize(("effect", "mode"), list(product(Effect, PolicyMode)))
def test_every_combination_obeys_the_rules(effect: Effect, mode: PolicyMode) -> None:
    """For every allow x readOnly x granted x session combination, the decision follows the five rules.

    ``by_mode`` is written out here, not read from ``MODE_EFFECTS``: it is the issue's definition of the modes
    (ask runs read; auto runs read and write; full runs everything), checked against the implementation."""
    by_mode = {PolicyMode.ASK: set[Effect](), PolicyMode.AUTO: {Effect.WRITE}, PolicyMode.FULL: set(Effect)}[
        mode
    ]
    for allow, read_only in product(SUBSETS, (False, True)):
        policy = Policy(mode=mode, allow=allow, read_only=read_only)
        for granted, session in product(SUBSETS, SUBSETS):
            decision = decide(effect, policy, granted, session)
            if effect is Effect.READ:
                assert isinstance(decision, Allow)
                continue
            if isinstance(decision, Allow):
                # the safety property: nothing ungranted ever runs, nothing runs in a read-only run
                assert effect in granted and not read_only
                assert effect in by_mode or effect in allow or effect in session
            if read_only:
                assert decision == Deny(reason=DenyReason.READ_ONLY)
            elif effect not in granted:
                assert decision == Deny(reason=DenyReason.NOT_GRANTED)
            elif effect in by_mode or effect in allow or effect in session:
                assert isinstance(decision, Allow)
            elif mode is PolicyMode.ASK:
                assert isinstance(decision, Ask)
            else:
                assert decision == Deny(reason=DenyReason.NOT_ALLOWED)
            if isinstance(decision, Ask):
                assert mode is PolicyMode.ASK


@pytest.mark.parametrize("effect", list(Effect))
def test_decision_depends_only_on_the_effect_itself(effect: Effect) -> None:
    """Which other effects are allowed, granted or session-granted never changes the decision for this one."""
    only = frozenset({effect})
    for mode, allow, read_only in product(PolicyMode, SUBSETS, (False, True)):
        policy = Policy(mode=mode, allow=allow, read_only=read_only)
        narrowed = Policy(mode=mode, allow=allow & only, read_only=read_only)
        for granted, session in product(SUBSETS, SUBSETS):
            assert decide(effect, policy, granted, session) == decide(
                effect, narrowed, granted & only, session & only
            )


@pytest.mark.parametrize("effect", list(Effect))
def test_more_permission_never_decides_less(effect: Effect) -> None:
    """Adding the effect to allow, granted or session grants, dropping readOnly, or switching to mode full
    never lowers the decision (Deny < Ask < Allow)."""
    flags = (False, True)

    def decided(mode: PolicyMode, in_allow: bool, read_only: bool, in_granted: bool, in_session: bool) -> int:
        def subset(member: bool) -> frozenset[Effect]:
            return frozenset({effect}) if member else frozenset()

        policy = Policy(mode=mode, allow=subset(in_allow), read_only=read_only)
        return _rank(decide(effect, policy, subset(in_granted), subset(in_session)))

    for mode, in_allow, read_only, in_granted, in_session in product(PolicyMode, flags, flags, flags, flags):
        base = decided(mode, in_allow, read_only, in_granted, in_session)
        assert decided(mode, True, read_only, in_granted, in_session) >= base
        assert decided(mode, in_allow, False, in_granted, in_session) >= base
        assert decided(mode, in_allow, read_only, True, in_session) >= base
        assert decided(mode, in_allow, read_only, in_granted, True) >= base
        assert decided(PolicyMode.FULL, in_allow, read_only, in_granted, in_session) >= base


def test_alisio_run_ceiling_allows_everything_in_full_mode() -> None:
    """With every effect granted (alisio run), mode full allows every effect and mode ask asks for each non-read one."""
    for effect in Effect:
        assert isinstance(decide(effect, Policy(mode=PolicyMode.FULL), ALL_EFFECTS), Allow)
        expected = Allow if effect is Effect.READ else Ask
        assert isinstance(decide(effect, Policy(mode=PolicyMode.ASK), ALL_EFFECTS), expected)


def test_the_spec_example_policy_edits_and_runs_its_check_and_refuses_the_rest() -> None:
    """The spec's ``{"mode": "auto", "allow": ["process"]}`` under --allow-write --allow-process: read, write and
    process run; external and analysis are refused (not asked) even when granted."""
    policy = Policy(mode=PolicyMode.AUTO, allow=frozenset({Effect.PROCESS}))
    decisions = {effect: decide(effect, policy, ALL_EFFECTS) for effect in Effect}
    assert decisions == {
        Effect.READ: Allow(),
        Effect.WRITE: Allow(),
        Effect.PROCESS: Allow(),
        Effect.EXTERNAL: Deny(reason=DenyReason.NOT_ALLOWED),
        Effect.ANALYSIS: Deny(reason=DenyReason.NOT_ALLOWED),
    }
    granted = frozenset({Effect.READ, Effect.WRITE, Effect.PROCESS})
    assert check_task_policy(policy, granted, allow_suite_full=False) == Success(None)


@pytest.mark.parametrize("effect", list(Effect))
def test_auto_never_decides_less_than_ask_and_full_never_less_than_auto(effect: Effect) -> None:
    """The modes are ordered ask <= auto <= full for every effect, allow, readOnly, grant and session grant."""
    for allow, read_only, granted, session in product(SUBSETS, (False, True), SUBSETS, SUBSETS):
        ranks = [
            _rank(decide(effect, Policy(mode=mode, allow=allow, read_only=read_only), granted, session))
            for mode in (PolicyMode.ASK, PolicyMode.AUTO, PolicyMode.FULL)
        ]
        if effect is Effect.WRITE or effect is Effect.READ or effect in allow or effect in session:
            assert ranks[0] <= ranks[1] <= ranks[2]
        else:  # auto refuses what ask would put to the user: the only place the order is Ask > Deny
            assert ranks[1] <= ranks[2]


def _needed(mode: PolicyMode, allow: frozenset[Effect], read_only: bool) -> frozenset[Effect]:
    """The issue's rule: allow (but read), plus write for mode auto unless readOnly."""
    return (allow | ({Effect.WRITE} if mode is PolicyMode.AUTO and not read_only else set())) - {Effect.READ}


@pytest.mark.parametrize("mode", list(PolicyMode))
def test_check_task_policy_rejects_exactly_what_was_not_granted(mode: PolicyMode) -> None:
    """A task is accepted iff every effect it needs was granted (its allow but read; write for mode auto unless
    readOnly) and mode full has --allow-suite-full; the error names the first missing effect, what needs it
    and its flag."""
    for allow, read_only, granted, suite_full in product(SUBSETS, (False, True), SUBSETS, (False, True)):
        policy = Policy(mode=mode, allow=allow, read_only=read_only)
        assert needed_effects(policy) == _needed(mode, allow, read_only)
        result = check_task_policy(policy, granted, suite_full)
        missing = _needed(mode, allow, read_only) - granted
        if not missing and (mode is not PolicyMode.FULL or suite_full):
            assert result == Success(None)
            continue
        assert isinstance(result, Failure)
        error = result.failure()
        assert isinstance(error, PolicyError)
        if missing:
            first = next(effect for effect in Effect if effect in missing)
            assert error.effect is first
            if first in allow:
                needs = f"policy.allow asks for the {first} effect"
            else:
                needs = (
                    f'policy.mode "{mode}" needs the {first} effect (it edits the workspace without asking)'
                )
            assert str(error) == f"{needs}, which was not granted (pass {GRANT_FLAGS[first]})"
            assert error.under_read_only() == f"{needs}, which --read-only denies"
        else:
            assert error.effect is None
            assert str(error) == error.under_read_only() == 'policy.mode "full" needs --allow-suite-full'


def test_the_messages_of_a_missing_grant_are_exact() -> None:
    """What a user reads when a task in mode auto, or its allow, needs a grant they did not give."""
    spec_example = Policy(mode=PolicyMode.AUTO, allow=frozenset({Effect.PROCESS}))
    error = check_task_policy(spec_example, frozenset({Effect.READ, Effect.PROCESS}), False).failure()
    assert str(error) == (
        'policy.mode "auto" needs the write effect (it edits the workspace without asking), '
        "which was not granted (pass --allow-write)"
    )
    assert error.under_read_only() == (
        'policy.mode "auto" needs the write effect (it edits the workspace without asking), which --read-only denies'
    )
    error = check_task_policy(spec_example, frozenset({Effect.READ, Effect.WRITE}), False).failure()
    assert (
        str(error) == "policy.allow asks for the process effect, which was not granted (pass --allow-process)"
    )
    assert error.under_read_only() == "policy.allow asks for the process effect, which --read-only denies"
    read_only_auto = Policy(mode=PolicyMode.AUTO, read_only=True)
    assert check_task_policy(read_only_auto, frozenset({Effect.READ}), False) == Success(None)


def test_every_non_read_effect_has_a_flag() -> None:
    """Each grantable effect maps to its --allow-* flag, and read needs none."""
    assert set(GRANT_FLAGS) == ALL_EFFECTS - {Effect.READ}
    for effect, flag in GRANT_FLAGS.items():
        assert flag == f"--allow-{effect}"


@pytest.mark.parametrize(("effect", "reason"), list(product(Effect, DenyReason)))
def test_denial_message_names_the_cause(effect: Effect, reason: DenyReason) -> None:
    """The message the model sees says it was denied by policy and why."""
    message = denial_message(effect, reason)
    assert message.startswith("denied by policy: ")
    if reason is DenyReason.READ_ONLY:
        assert "read-only" in message
    else:
        assert str(effect) in message


policies = st.builds(
    Policy,
    mode=st.sampled_from(PolicyMode),
    allow=st.frozensets(st.sampled_from(Effect)),
    read_only=st.booleans(),
)


@given(policies)
def test_policy_round_trips_through_json(policy: Policy) -> None:
    """A policy encodes to the suite.json shape (mode, allow, readOnly) and decodes back equal."""
    data = msgspec.json.encode(policy)
    assert set(msgspec.json.decode(data)) <= {"mode", "allow", "readOnly"}
    assert msgspec.json.decode(data, type=Policy) == policy


def test_policy_reads_the_spec_shape_and_rejects_typos() -> None:
    """The spec's example decodes; an unknown field or an unknown effect is an error naming it."""
    policy = msgspec.json.decode(b'{"mode": "auto", "allow": ["process"]}', type=Policy)
    assert policy == Policy(mode=PolicyMode.AUTO, allow=frozenset({Effect.PROCESS}))
    with pytest.raises(msgspec.ValidationError, match="readonly"):
        msgspec.json.decode(b'{"mode": "auto", "readonly": true}', type=Policy)
    with pytest.raises(msgspec.ValidationError, match=r"\$\.allow\[0\]"):
        msgspec.json.decode(b'{"mode": "auto", "allow": ["network"]}', type=Policy)
