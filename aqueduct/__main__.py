"""`python -m aqueduct` runs the `aqueduct` command."""

import sys

from .cli import main

sys.exit(main())
