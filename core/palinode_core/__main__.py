"""``python -m palinode_core`` is ``palinode-audit``."""

import sys

from palinode_core.cli import main

sys.exit(main())
