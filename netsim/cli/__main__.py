"""``python -m netsim.cli ARGS``: the ``netsim`` command."""
import sys

from netsim.cli import main

sys.exit(main())
