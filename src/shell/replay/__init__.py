"""The commands over the bundled cassettes, a floor above the lab pipeline they call: ``eval ci`` (every suite's
cassettes replayed) and the re-recording of the bundled cassettes (``make record-bundled``). Cassette files and
the record and replay plans are the pipeline's (``alisio.shell.lab.cassettes``, ``alisio.shell.lab.record``)."""
