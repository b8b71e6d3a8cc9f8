"""``python -m netsim.cli ARGS``: the ``netsim`` command (in its own process: netsim.cli.entry)."""
from netsim.cli import entry

entry()
