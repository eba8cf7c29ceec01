"""``python -m servers.cli``: the ``toolhost`` command line."""

import sys

from servers.cli.app import main

sys.exit(main())
