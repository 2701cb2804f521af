"""Hypothesis strategies for the file tools' pure rules (alisio.core.harness.edits, reading, toolenv)."""

from __future__ import annotations

from hypothesis import strategies as st

# Few letters and line ends make repeated and overlapping occurrences common (the interesting cases).
file_text = st.text(alphabet="ab \n\r\té😊", max_size=60)
needles = st.text(alphabet="ab \n\té", min_size=1, max_size=4)
replacements = st.text(alphabet="abxy\n", max_size=5)
digests = st.text(alphabet="0123456789abcdef", min_size=4, max_size=8)

line_lists = st.lists(
    st.text(alphabet="ab é\r", max_size=12).map(lambda line: line + "\n"), min_size=1, max_size=12
)
"""Lines as read_file splits them: each ends with ``\\n``."""

MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
variable_names = st.one_of(
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789", min_size=1, max_size=12),
    st.tuples(
        st.text(alphabet="ABCXYZ_", max_size=5),
        st.sampled_from(MARKERS),
        st.text(alphabet="ABCXYZ_", max_size=5),
    ).map("".join),
    st.sampled_from(
        ["GIT_AUTHOR_NAME", "XKB_KEYMAP", "XAUTHORITY", "TOKENIZERS_PARALLELISM", "api_key", "Auth"]
    ),
)
environments = st.dictionaries(variable_names, st.text(alphabet="abcsk-0123456789/", max_size=20), max_size=8)
