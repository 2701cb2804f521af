"""The comparisons: two reports compared, the gates of eval compare, eval variants, stability, eval power."""
