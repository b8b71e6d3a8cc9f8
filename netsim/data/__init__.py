"""Datasets, partitions and the per-client tensors the runtime trains on (see docs/architecture.md)."""
from netsim.data.client_data import (DATA_FIELDS, SPLITS, ClientData, build_client_data,
                                     client_arrays, client_splits, validate_data)
from netsim.data.datasets import (DATASETS, DatasetInfo, RawDataset, dataset_info, draw_range,
                                  load_dataset)
from netsim.data.partitions import PARTITIONS, Partition, check_partition, make_partition
from netsim.data import extra_partitions, paper_partitions, rotations  # noqa: F401 (register)
from netsim.data import local, natural  # noqa: E402,F401  (register file datasets, natural)
from netsim.data import mnist1d  # noqa: E402,F401  (registers mnist1d)

__all__ = ["DATASETS", "PARTITIONS", "DATA_FIELDS", "SPLITS", "ClientData", "DatasetInfo",
           "Partition", "RawDataset", "build_client_data", "check_partition", "client_arrays",
           "client_splits", "dataset_info", "draw_range", "load_dataset", "make_partition",
           "validate_data"]
