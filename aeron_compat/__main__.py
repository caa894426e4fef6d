"""`python -m aeron_compat`: the same as the `aeron_compat` command."""

import sys

from .tools.cli import main

sys.exit(main())
