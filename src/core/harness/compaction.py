"""Context compaction: when to compact, what to replace, and the checkpoint call that replaces it.

When the serialized conversation passes ``compaction.threshold x limits.maxContextChars``, the older part of
the conversation is replaced by a checkpoint the model writes in a separate provider call
(``purpose="compaction"``; its tokens are counted apart from the main loop).

Rules this module keeps:

- the task prompt (the first message, a user message) is never inside the replaced part: it stays verbatim, so a
  rule stated in the prompt is in every later request word for word;
- an assistant message that calls tools and the tool results that answer it are never split: the kept part
  never starts with a tool result; the latest exchange (results the model has not answered yet) is always kept;
- a previous checkpoint is folded into the next one (the checkpoint call sees it), and a plan that would only
  replace the previous checkpoint is empty (nothing new to fold in, so no thrashing);
- sizes are characters of the JSON the conversation serializes to (``message_chars``), so the loop can keep a
  running sum instead of re-serializing the whole conversation each turn.
"""

from __future__ import annotations

import msgspec

from alisio.core.base import Frozen
from alisio.core.harness.config_provider import Sampling
from alisio.core.harness.protocol import (
    Message,
    ProviderRequest,
    ToolMessage,
    UserMessage,
)

__all__ = [
    "CHECKPOINT_ASK",
    "CHECKPOINT_INSTRUCTIONS",
    "CHECKPOINT_PREFIX",
    "CompactionPlan",
    "apply_checkpoint",
    "checkpoint_request",
    "conversation_chars",
    "is_checkpoint",
    "message_chars",
    "plan_compaction",
    "recent_to_keep",
    "should_compact",
]

CHECKPOINT_PREFIX = "[Checkpoint of the earlier conversation, written by you when the context grew long.]\n"
"""Starts the user message that stands in for the replaced part of the conversation."""

CHECKPOINT_INSTRUCTIONS = """\
You are compacting the context of a coding agent that is working on a task. The conversation so far is too \
long; its first message (the task prompt) and its older part follow. Write a checkpoint that replaces the \
older part. The agent will continue from the task prompt (kept verbatim), your checkpoint, and the most \
recent messages.

The checkpoint must contain, under these headings:
1. Rules and constraints: every rule, constraint, required format, naming or scope restriction stated so far \
(in the task prompt, by tools or in earlier checkpoints), each copied VERBATIM as a quotation. Never paraphrase, \
shorten or merge them.
2. Decisions: what was decided and why.
3. Files: each file read, created or changed, with what it now contains or what changed, and its latest sha256 \
if one was shown.
4. Facts: results of commands, values found, anything still needed later.
5. Remaining work: what is left to do to finish the task, in order.

Write only the checkpoint, as plain text. Do not call tools."""
"""The system instructions of the checkpoint call."""

CHECKPOINT_ASK = (
    "Write the checkpoint of the conversation above now, as your instructions say. Do not call tools."
)
"""The last message of the checkpoint call."""

_encoder = msgspec.json.Encoder()


class CompactionPlan(Frozen, frozen=True, kw_only=True):
    """Messages ``[start, end)`` of the conversation are replaced by one checkpoint message."""

    start: int
    """Always 1: message 0 is the task prompt, kept verbatim."""
    end: int
    """The first kept recent message (never a tool result)."""
    empty: bool
    """True when there is nothing worth replacing (no messages, or only the previous checkpoint)."""

    @property
    def replaced(self) -> int:
        """How many messages the checkpoint replaces."""
        return self.end - self.start


def message_chars(message: Message) -> int:
    """Characters of one message as JSON (what ``conversation_chars`` sums)."""
    return len(_encoder.encode(message))


def conversation_chars(instructions: str, messages: tuple[Message, ...]) -> int:
    """The serialized size of a conversation: the instructions plus every message as JSON."""
    return len(instructions) + sum(message_chars(message) for message in messages)


def should_compact(chars: int, threshold: float, max_context_chars: int) -> bool:
    """True when the conversation has passed ``threshold x max_context_chars`` characters."""
    return chars > threshold * max_context_chars


def is_checkpoint(message: Message) -> bool:
    """True for the user message a previous compaction put in place of older messages."""
    return isinstance(message, UserMessage) and message.content.startswith(CHECKPOINT_PREFIX)


def plan_compaction(messages: tuple[Message, ...], keep_recent: int) -> CompactionPlan:
    """Choose the older messages to replace: all but the task prompt and the ``keep_recent`` latest.

    The boundary moves earlier while the first kept message is a tool result, so a tool call and its results
    stay together. Tool results at the end of the conversation (the model has not answered them yet) are
    always kept with the assistant message that called them, whatever ``keep_recent`` and their size:
    replacing them by a checkpoint would have the model repeat the calls, compacting every turn. The plan
    is empty when it would replace nothing, or only a previous checkpoint.

    Args:
        messages: the conversation without the system instructions; ``messages[0]`` is the task prompt.
        keep_recent: how many of the latest messages to keep as they are (at least 0).
    """
    end = max(1, len(messages) - max(0, keep_recent))
    unanswered = len(messages)
    while unanswered > 1 and isinstance(messages[unanswered - 1], ToolMessage):
        unanswered -= 1
    if unanswered < len(messages):
        # The conversation ends with tool results the model has not seen yet: keep them and the call.
        end = min(end, max(1, unanswered - 1))
    while 1 < end < len(messages) and isinstance(messages[end], ToolMessage):
        end -= 1
    replaced = messages[1:end]
    empty = not replaced or (len(replaced) == 1 and is_checkpoint(replaced[0]))
    return CompactionPlan(start=1, end=end, empty=empty)


def recent_to_keep(messages: tuple[Message, ...], budget_chars: float, max_keep: int) -> int:
    """How many of the latest messages to keep: as many as fit in ``budget_chars``, at most ``max_keep``.

    The task prompt (message 0) is never counted. Keeping by size as well as by count lets compaction help
    when a few recent tool results are large, instead of keeping them and compacting again every turn.
    """
    kept = 0
    total = 0
    for message in reversed(messages[1:]):
        size = message_chars(message)
        if kept >= max_keep or total + size > budget_chars:
            break
        kept += 1
        total += size
    return kept


def checkpoint_request(
    model: str,
    task_prompt: str,
    older_messages: tuple[Message, ...],
    max_output_tokens: int | None = None,
    reasoning_effort: str | None = None,
    cache: bool = True,
    sampling: Sampling | None = None,
) -> ProviderRequest:
    """The separate provider call that writes a checkpoint of ``older_messages`` (``cache``: the measured key).

    It carries the same settings as a main-loop call (output limit, reasoning effort, ``[sampling]``), so the
    model that writes the checkpoint samples as the one that runs the task.

    The conversation is sent as it is (the task prompt, then the older messages, whole tool exchanges only,
    so it is well formed), followed by one user message asking for the checkpoint; no tools are offered.
    """
    messages: tuple[Message, ...] = (
        UserMessage(content=task_prompt),
        *older_messages,
        UserMessage(content=CHECKPOINT_ASK),
    )
    return ProviderRequest(
        model=model,
        instructions=CHECKPOINT_INSTRUCTIONS,
        messages=messages,
        tools=(),
        max_output_tokens=max_output_tokens,
        reasoning_effort=reasoning_effort,
        purpose="compaction",
        cache=cache,
        temperature=None if sampling is None else sampling.temperature,
        top_p=None if sampling is None else sampling.top_p,
        seed=None if sampling is None else sampling.seed,
    )


def apply_checkpoint(
    messages: tuple[Message, ...], plan: CompactionPlan, checkpoint_text: str
) -> tuple[Message, ...]:
    """Replace the planned messages by one checkpoint user message; the rest stays as it was."""
    checkpoint = UserMessage(content=CHECKPOINT_PREFIX + checkpoint_text)
    return (*messages[: plan.start], checkpoint, *messages[plan.end :])
