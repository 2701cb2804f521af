"""Compaction's effects: when ``alisio.core.harness.compaction`` says the conversation is due, the checkpoint
call that summarises its older messages, and the conversation rewritten with the summary in their place.

Rules this module keeps:
- the latest messages are kept as they are (``KEEP_RECENT_MESSAGES``, at most half the threshold's size);
- the checkpoint call is a provider call like any other (its own ``provider_request`` and
  ``provider_response``, purpose ``checkpoint``, given only the wall time left); its usage goes into the
  ``Compacted`` event only, never into the main-loop tokens;
- an empty checkpoint would silently drop the older messages: they are kept, and compaction is tried again
  next turn;
- a rewrite is one ``compaction`` event and one ``compaction`` incident with the sizes before and after.
"""

from __future__ import annotations

from alisio.core.harness.agent_step import Stop
from alisio.core.harness.compaction import (
    apply_checkpoint,
    checkpoint_request,
    plan_compaction,
    recent_to_keep,
    should_compact,
)
from alisio.core.harness.events import Compacted, IncidentKind
from alisio.core.harness.protocol import ProviderResponse
from alisio.shell.harness.conversation import Conversation
from alisio.shell.harness.provider_calls import ProviderCalls

__all__ = ["KEEP_RECENT_MESSAGES", "compact_if_due"]

KEEP_RECENT_MESSAGES = 6
"""The latest messages kept as they are on compaction (about 3 tool exchanges; at most half the threshold)."""


def compact_if_due(conversation: Conversation, calls: ProviderCalls, turn: int) -> Stop | None:
    """Compact ``conversation`` when it is due; the run's ``Stop`` when the checkpoint call failed."""
    setup = calls.setup
    measured = setup.measured
    if not should_compact(
        conversation.chars, measured.compaction.threshold, measured.limits.max_context_chars
    ):
        return None
    messages = tuple(conversation.messages)
    threshold_chars = measured.compaction.threshold * measured.limits.max_context_chars
    keep = recent_to_keep(messages, threshold_chars / 2, KEEP_RECENT_MESSAGES)
    plan = plan_compaction(messages, keep)
    if plan.empty:
        return None
    request = checkpoint_request(
        setup.model,
        setup.prompt,
        messages[plan.start : plan.end],
        max_output_tokens=measured.limits.max_output_tokens,
        reasoning_effort=measured.reasoning.effort,
        cache=measured.cache,
        sampling=measured.sampling,
    )
    response = calls.call(request, turn)
    if not isinstance(response, ProviderResponse):
        return response
    if not response.text.strip():
        return None  # keep the older turns and try again next turn
    before = conversation.chars
    conversation.replace(apply_checkpoint(messages, plan, response.text))
    after = conversation.chars
    log = calls.log
    log.emit(
        Compacted,
        chars_before=before,
        chars_after=after,
        messages_replaced=plan.replaced,
        usage=response.usage,
    )
    what = f"replaced {plan.replaced} older messages by a checkpoint"
    log.incident(IncidentKind.COMPACTION, f"{what} ({before} -> {after} characters)")
    return None
