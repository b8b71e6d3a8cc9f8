"""Components layer: the network models (numpy): links, failures, latency/bandwidth, loss, compute.

Each section has a schema (``*_FIELDS`` or a registry), a ``validate_<section>(spec, path, n)``
that fills defaults and raises ConfigError naming the field, and a ``make_<section>`` factory
taking the validated spec and its own random stream.
"""
from netsim.links.compute import (COMPUTE_FIELDS, SPEEDS, STRAGGLER_FIELDS, ComputeModel,
                                  make_compute, validate_compute)
from netsim.links.failures import (CHURN_FIELDS, CRASH_FIELDS, FAILURE_FIELDS, SCRIPTED_FIELDS,
                                   FailureModel, make_failures, validate_failures)
from netsim.links.latency import (JITTER, LATENCY_FIELDS, LatencyModel, make_latency,
                                  validate_latency)
from netsim.links.loss import LOSS_FIELDS, LossModel, make_loss, validate_loss
from netsim.links.models import LINKS, LinkModel, make_links, validate_links
from netsim.links.trace import TraceLinks, read_link_trace

__all__ = [
    "COMPUTE_FIELDS", "SPEEDS", "STRAGGLER_FIELDS", "ComputeModel", "make_compute",
    "validate_compute", "CHURN_FIELDS", "CRASH_FIELDS", "FAILURE_FIELDS", "SCRIPTED_FIELDS",
    "FailureModel", "make_failures", "validate_failures", "JITTER", "LATENCY_FIELDS",
    "LatencyModel", "make_latency", "validate_latency", "LINKS", "LinkModel", "make_links",
    "validate_links", "LOSS_FIELDS", "LossModel", "make_loss", "validate_loss", "TraceLinks",
    "read_link_trace",
]
