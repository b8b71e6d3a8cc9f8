"""netsim: decentralised and personalised collaborative learning over simulated networks.

``from netsim import Scenario, run, Results``: load or build a scenario, run it, read results;
``run_sweep`` for a robustness study (``SweepResults``); ``register_algorithm`` and
``register_link_model`` add components from a script. Examples: docs/python_api.md.
"""
import netsim.threads  # noqa: F401  (first: OpenMP's short spin, before torch is loaded)
from netsim._version import __version__  # noqa: E402
from netsim.api import (SweepResults, register_algorithm, register_link_model,  # noqa: E402
                        run_sweep)
from netsim.config import Scenario  # noqa: E402
from netsim.errors import ConfigError  # noqa: E402
from netsim.results import Results  # noqa: E402
from netsim.runner import run  # noqa: E402

__all__ = ["Scenario", "run", "Results", "run_sweep", "SweepResults", "register_algorithm",
           "register_link_model", "ConfigError", "__version__"]
