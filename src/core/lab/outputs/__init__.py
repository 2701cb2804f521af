"""What people and CI read: the views of a report and a comparison, Markdown, HTML, JUnit, the step summary, progress
lines and eval show; every renderer is here."""
