"""Components layer: the network models (numpy): links, failures, latency/bandwidth, loss, compute.

Each section has a schema (a ``*Params`` dataclass, netsim.schema.params, or a registry), a
``validate_<section>(spec, path, n)`` that fills defaults and raises ConfigError naming the
field, and a ``make_<section>`` factory taking the validated spec and its own random stream.
"""
from netsim.links.compute import (SPEEDS, ComputeModel, ComputeParams, StragglerParams,
                                  make_compute, validate_compute)
from netsim.links.failures import (OUTAGES, ChurnParams, CrashParams, FailureModel, FailureParams,
                                   make_failures, validate_failures)
from netsim.links.latency import (JITTER, LatencyModel, LatencyParams, make_latency,
                                  validate_latency)
from netsim.links.loss import LossModel, LossParams, make_loss, validate_loss
from netsim.links.models import LINKS, LinkModel, make_links, validate_links
from netsim.links.trace import TraceLinks, read_link_trace

__all__ = [
    "SPEEDS", "ComputeModel", "ComputeParams", "StragglerParams", "make_compute",
    "validate_compute", "OUTAGES", "ChurnParams", "CrashParams", "FailureModel", "FailureParams",
    "make_failures", "validate_failures", "JITTER", "LatencyModel", "LatencyParams",
    "make_latency", "validate_latency", "LINKS", "LinkModel", "make_links", "validate_links",
    "LossModel", "LossParams", "make_loss", "validate_loss", "TraceLinks", "read_link_trace",
]
