"""networkx analyses of collaboration graphs (from W) and realised communication graphs."""
from netsim.analysis.graphs import (collab_graph, edge_precision_recall, edges, link_share,
                                    oracle_matrix)

__all__ = ["collab_graph", "edge_precision_recall", "edges", "link_share", "oracle_matrix"]
