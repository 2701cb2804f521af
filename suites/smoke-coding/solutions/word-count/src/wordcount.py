"""Word statistics for the search index."""

import re
from collections import Counter


def word_counts(text: str) -> dict[str, int]:
    """Count the words of ``text``.

    A word is a maximal run of ASCII letters, digits and apostrophes ('); everything else separates
    words. Counting ignores case: words are reported in lowercase. Apostrophes at the start or end of a
    word are not part of it ("'quoted'" is the word quoted), and a run made only of apostrophes is not a
    word.

    >>> word_counts("The cat saw THE dog.")
    {'the': 2, 'cat': 1, 'saw': 1, 'dog': 1}
    """
    words = (word.strip("'") for word in re.findall(r"[A-Za-z0-9']+", text))
    return dict(Counter(word.lower() for word in words if word))


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    """The ``n`` most frequent words, most frequent first, ties in alphabetical order."""
    counts = word_counts(text)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
