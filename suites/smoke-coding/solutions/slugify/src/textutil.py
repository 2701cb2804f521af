"""Text helpers for the blog engine."""

import re


def slugify(title: str) -> str:
    """Turn a post title into a URL slug.

    Rules: lowercase the title; every run of characters that are not ASCII letters (a-z) or digits
    (0-9) becomes a single "-"; the slug never starts or ends with "-". A title with no letters or
    digits gives the empty string.

    >>> slugify("Hello, World!")
    'hello-world'
    >>> slugify("  C++ & Rust: 2024 edition ")
    'c-rust-2024-edition'
    """
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def excerpt(text: str, limit: int = 40) -> str:
    """The first ``limit`` characters of ``text``, with "..." when it was cut."""
    return text if len(text) <= limit else text[:limit].rstrip() + "..."
