"""Context compaction: when to compact, what to replace, and the checkpoint call that replaces it.

When the serialized conversation passes ``compaction.threshold x limits.maxContextChars``, the older part of
the conversation is replaced by a checkpoint the model writes in a separate provider call
(``purpose="compaction"``; its tokens are counted apart from the main loop).

Rules this module keeps:

- the task prompt (the first message, a user message) is never inside the replaced part: it stays verbatim, so a
  rule stated in the prompt is in every later request word for word;
- an assistant message that calls tools and the tool results that answer it are never split: the kept part
  never starts with a tool result;
- a previous checkpoint is folded into the next one (the checkpoint call sees it), and a plan that would only
  replace the previous checkpoint is empty (nothing new to fold in, so no thrashing);
- sizes are characters of the JSON the conversation serializes to (``message_chars``), so the loop can keep a
  running sum instead of re-serializing the whole conversation each turn.
"""

from __future__ import annotations

import msgspec

from core.base import Frozen
from core.protocol import (
    AssistantMessage,
    Message,
    ProviderRequest,
    SystemMessage,
    ToolMessage,
    UserMessage,
)

__all__ = [
    "CHECKPOINT_INSTRUCTIONS",
    "CHECKPOINT_PREFIX",
    "CompactionPlan",
    "apply_checkpoint",
    "checkpoint_request",
    "conversation_chars",
    "is_checkpoint",
    "message_chars",
    "plan_compaction",
    "should_compact",
]

CHECKPOINT_PREFIX = "[Checkpoint of the earlier conversation, written by you when the context grew long.]\n"
"""Starts the user message that stands in for the replaced part of the conversation."""

CHECKPOINT_INSTRUCTIONS = """\
You are compacting the context of a coding agent that is working on a task. The conversation so far is too \
long; the transcript of its older part follows. Write a checkpoint that replaces that part. The agent will \
continue from the task prompt (kept verbatim), your checkpoint, and the most recent messages.

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
    stay together. The plan is empty when it would replace nothing, or only a previous checkpoint.

    Args:
        messages: the conversation without the system instructions; ``messages[0]`` is the task prompt.
        keep_recent: how many of the latest messages to keep as they are (at least 0).
    """
    end = max(1, len(messages) - max(0, keep_recent))
    while 1 < end < len(messages) and isinstance(messages[end], ToolMessage):
        end -= 1
    replaced = messages[1:end]
    empty = not replaced or (len(replaced) == 1 and is_checkpoint(replaced[0]))
    return CompactionPlan(start=1, end=end, empty=empty)


def _transcript_line(message: Message) -> str:
    match message:
        case SystemMessage(content=content):
            return f"[system]\n{content}"
        case UserMessage(content=content):
            return f"[user]\n{content}"
        case AssistantMessage(content=content, tool_calls=calls):
            parts = [f"[assistant]\n{content}"] if content else []
            parts.extend(f"[assistant calls {call.name}] {call.arguments}" for call in calls)
            return "\n".join(parts) or "[assistant]"
        case ToolMessage(name=name, content=content):
            return f"[result of {name}]\n{content}"


def checkpoint_request(
    model: str,
    task_prompt: str,
    older_messages: tuple[Message, ...],
    max_output_tokens: int | None = None,
    reasoning_effort: str | None = None,
) -> ProviderRequest:
    """The separate provider call that writes a checkpoint of ``older_messages``.

    The older messages go in as one transcript (no tool-call structure, no tools), so every provider accepts
    the request. The task prompt is shown for context; it is kept verbatim in the conversation anyway.
    """
    transcript = "\n\n".join(_transcript_line(message) for message in older_messages)
    content = (
        f"Task prompt (kept verbatim; copy its rules into the checkpoint word for word):\n<<<\n{task_prompt}\n>>>"
        f"\n\nOlder conversation to replace:\n<<<\n{transcript}\n>>>\n\nWrite the checkpoint now."
    )
    return ProviderRequest(
        model=model,
        instructions=CHECKPOINT_INSTRUCTIONS,
        messages=(UserMessage(content=content),),
        tools=(),
        max_output_tokens=max_output_tokens,
        reasoning_effort=reasoning_effort,
        purpose="compaction",
    )


def apply_checkpoint(
    messages: tuple[Message, ...], plan: CompactionPlan, checkpoint_text: str
) -> tuple[Message, ...]:
    """Replace the planned messages by one checkpoint user message; the rest stays as it was."""
    checkpoint = UserMessage(content=CHECKPOINT_PREFIX + checkpoint_text)
    return (*messages[: plan.start], checkpoint, *messages[plan.end :])
