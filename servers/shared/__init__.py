"""Light pieces both the command line and the serve's surfaces use (stdlib only: the CLI imports them at start)."""
