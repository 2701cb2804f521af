"""The rules of ``edit_file``, as pure functions: when an edit is refused, and what text it makes.

The shell (``alisio.shell.harness.tools.files``) reads the file and writes the result; everything it decides
in between is here. Rules:

- an edit names text to replace: ``old_string`` must not be empty, and ``new_string`` must differ from it;
- an edit is made against text the model has seen: with a ``sha256`` argument the file must still have that
  hash; without one, this run must have read (or written) the file, and it must not have changed since;
- ``old_string`` must occur exactly once in the file, matched character for character; an absent or
  repeated ``old_string`` is refused, saying how many times it was found;
- the replacement changes only that occurrence; the result reports its line (1-based, lines end at ``\\n``).

Every refusal is an ``EditRefusal`` whose ``message`` is the tool result the model reads: it says what to do.
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen

__all__ = ["Edit", "EditRefusal", "apply_edit", "check_edit_request", "check_fresh"]


class EditRefusal(Frozen, frozen=True, kw_only=True, tag="edit_refusal"):
    """An edit that is not made; ``message`` is what the model is told."""

    message: str

    def __str__(self) -> str:
        return self.message


class Edit(Frozen, frozen=True, kw_only=True):
    """The text of a file after one replacement, and where it was made."""

    text: str
    line: int
    """The line (from 1) where the replaced occurrence starts."""


def check_edit_request(old_string: str, new_string: str) -> Result[None, EditRefusal]:
    """Refuse an edit that names nothing to replace, or that would change nothing."""
    if not old_string:
        return Failure(
            EditRefusal(
                message="old_string is empty; give the exact text to replace (use write_file to create a file)"
            )
        )
    if old_string == new_string:
        return Failure(
            EditRefusal(message="new_string is the same as old_string: the edit would change nothing")
        )
    return Success(None)


def check_fresh(
    relative: str, current: str, passed: str | None, last_seen: str | None
) -> Result[None, EditRefusal]:
    """Refuse an edit made against text the model has not seen.

    Args:
        relative: the file, workspace-relative (named in the message).
        current: the sha256 of the file as it is now.
        passed: the ``sha256`` argument of the call, if any (compared case- and space-insensitively).
        last_seen: the sha256 of the content this run last read or wrote, ``None`` when it never did.

    Returns:
        ``Success(None)`` when the edit may go on; ``Failure(EditRefusal)`` when the passed hash is stale, or,
        without one, when the file was never read in this run or changed since.
    """
    if passed is not None:
        if passed.strip().lower() == current:
            return Success(None)
        return Failure(
            EditRefusal(
                message=f"refused: {relative} changed since the sha256 you passed ({passed}); its sha256 is "
                f"now {current}. read_file it again and make the edit against the current text"
            )
        )
    if last_seen is None:
        return Failure(
            EditRefusal(
                message=f"refused: {relative} has not been read in this run. read_file it first (or pass the "
                "sha256 read_file returned), then retry the edit"
            )
        )
    if last_seen != current:
        return Failure(
            EditRefusal(
                message=f"refused: {relative} changed since this run last read or wrote it (for example by a "
                "command). read_file it again and make the edit against the current text"
            )
        )
    return Success(None)


def apply_edit(relative: str, text: str, old_string: str, new_string: str) -> Result[Edit, EditRefusal]:
    """Replace the one occurrence of ``old_string`` in ``text`` (the file ``relative``) by ``new_string``.

    Returns:
        The new text and the line of the occurrence; ``Failure(EditRefusal)`` when ``old_string`` does not
        occur, or occurs more than once (the message gives the count). ``old_string`` is not empty
        (``check_edit_request``).
    """
    count = text.count(old_string)
    if count == 0:
        return Failure(
            EditRefusal(
                message=f"old_string was not found in {relative}. It must match the file character for "
                "character, whitespace and indentation included: read_file it again and copy the text exactly"
            )
        )
    if count > 1:
        return Failure(
            EditRefusal(
                message=f"old_string appears {count} times in {relative}; it must appear exactly once. Include "
                "more surrounding lines in old_string to make it unique"
            )
        )
    at = text.index(old_string)
    return Success(
        Edit(text=text[:at] + new_string + text[at + len(old_string) :], line=text.count("\n", 0, at) + 1)
    )
