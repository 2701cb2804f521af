"""Record and replay: cassette files, the record and replay hooks of the lab pipeline, ``eval ci`` and the
re-recording of the bundled cassettes (``make record-bundled``)."""
