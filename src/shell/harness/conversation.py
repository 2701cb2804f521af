"""One run's conversation as the loop keeps it: the messages, their size, and the request fingerprint.

The size is a running sum of message sizes (``alisio.core.harness.compaction.message_chars``, the instructions
included) and the request fingerprint a ``ConversationHash`` extended by the new messages only, so a turn costs
O(new messages), not O(conversation). Each message is normalised once (the fingerprint rules: the workspace path
becomes ``<workspace>``, a task's replayNormalize), when it is appended.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from alisio.core.harness.compaction import message_chars
from alisio.core.harness.protocol import Message, ProviderRequest
from alisio.core.replay.fingerprint import ConversationHash, Rules, normalize_request

__all__ = ["Conversation"]


@dataclass
class Conversation:
    rules: Rules
    instructions: str = ""
    messages: list[Message] = field(default_factory=list)
    chars: int = 0
    normalized: list[Message] = field(default_factory=list)
    """``messages`` with the fingerprint rules applied, kept in step so each message is normalised once."""
    normalized_instructions: str = ""
    hashed: ConversationHash | None = None
    """The fingerprint state of the first ``hashed.count`` normalised messages (reset when compaction rewrites)."""

    @classmethod
    def start(cls, rules: Rules, instructions: str) -> Conversation:
        """An empty conversation under the agent's ``instructions`` (their size counts from the start)."""
        alone = ProviderRequest(model="", instructions=instructions, messages=())
        normalized = normalize_request(alone, rules).instructions
        return cls(
            rules=rules,
            instructions=instructions,
            chars=len(instructions),
            normalized_instructions=normalized,
        )

    def append(self, message: Message) -> None:
        self.messages.append(message)
        self.normalized.append(self.normalize(message))
        self.chars += message_chars(message)

    def normalize(self, message: Message) -> Message:
        if not self.rules:
            return message
        alone = ProviderRequest(model="", instructions="", messages=(message,))
        return normalize_request(alone, self.rules).messages[0]

    def replace(self, messages: Iterable[Message]) -> None:
        """Start over with ``messages`` (a compaction's rewrite): the size and the fingerprint state are redone."""
        self.messages = []
        self.normalized = []
        self.hashed = None
        self.chars = len(self.instructions)
        for message in messages:
            self.append(message)

    def fingerprint(self, request: ProviderRequest) -> str:
        """The fingerprint of ``request`` (the next main-loop request, of this conversation) normalised."""
        normalized = msgspec.structs.replace(
            request, instructions=self.normalized_instructions, messages=tuple(self.normalized)
        )
        hashed = self.hashed
        if hashed is None or not hashed.matches(normalized):
            hashed = ConversationHash.start(normalized)
        self.hashed = hashed.extended(self.normalized[hashed.count :])
        return self.hashed.fingerprint(normalized)
