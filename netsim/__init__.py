"""netsim: decentralised and personalised collaborative learning over simulated networks.

``from netsim import Scenario, run, Results``: load or build a scenario, run it, read results;
``run_sweep`` for a robustness study (``SweepResults``); ``register_algorithm`` and
``register_link_model`` add components from a script. Examples: docs/python_api.md.

These names and the submodules (``netsim.plot``, ...) are imported on first use
(:mod:`netsim.util.lazy`): ``import netsim`` alone loads no torch.
"""
import netsim.util.threads  # noqa: F401  (first: OpenMP's short spin, before torch is loaded)
from netsim._version import __version__  # noqa: E402
from netsim.errors import ConfigError  # noqa: E402
from netsim.util.lazy import lazy_getattr  # noqa: E402

__getattr__ = lazy_getattr(__name__, {
    "Scenario": "netsim.scenario.config", "run": "netsim.running.runner",
    "Results": "netsim.results", "run_sweep": "netsim.api", "SweepResults": "netsim.api",
    "register_algorithm": "netsim.api", "register_link_model": "netsim.api"})

__all__ = ["Scenario", "run", "Results", "run_sweep", "SweepResults", "register_algorithm",
           "register_link_model", "ConfigError", "__version__"]
