"""A stdio "server" that writes argv[1] to stderr (as a failing ``npx``/``uvx`` install would) and
exits 1 before speaking MCP."""

import sys

sys.stderr.write(sys.argv[1] + "\n")
sys.stderr.flush()
sys.exit(1)
