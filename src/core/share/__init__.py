"""What keeps shared things clean: secret scanning and redaction, the export's scrubbing, and regular
expressions that cannot hang (RE2) for the patterns users and models write."""
