"""The Reliability Lab's pure rules: the suite model, the run plan, the judges, run records, reports and their
checks, the statistics kernel, comparisons and verdicts, variants, power, plan.json, transcripts and the
text people read (Markdown, progress lines, ``eval show``)."""
