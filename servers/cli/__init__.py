"""The ``toolhost`` command line: every command (:func:`servers.cli.app.main`), remote admin client, display."""
