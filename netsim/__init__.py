"""netsim: decentralised and personalised collaborative learning over simulated networks.

``from netsim import Scenario, run, Results``: load or build a scenario, run it, read results.
"""
__version__ = "0.1.0"

from netsim.config import Scenario  # noqa: E402
from netsim.errors import ConfigError  # noqa: E402
from netsim.results import Results  # noqa: E402


def run(scenario, seeds=None, out=None, quiet=False):
    """Run a scenario (a Scenario or a YAML path) for each seed; see netsim.runner.run."""
    from netsim.runner import run as _run
    return _run(scenario, seeds=seeds, out=out, quiet=quiet)


__all__ = ["Scenario", "run", "Results", "ConfigError", "__version__"]
