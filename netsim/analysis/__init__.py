"""networkx analyses of collaboration graphs (from W) and realised communication graphs."""
from netsim.analysis.communities import community_analysis, community_scores, detect_communities
from netsim.analysis.graphs import (collab_graph, edge_precision_recall, edges, group_shares,
                                    link_share, oracle_matrix)
from netsim.analysis.metrics import (asymmetry, components, degree_distribution, density,
                                     graph_metrics, in_degree, mixing_matrix, out_degree,
                                     reciprocity, spectral)
from netsim.analysis.report import (analyze, export_graphml, format_table, graph_series,
                                    robustness_table, write_analysis)
from netsim.analysis.stats import mean_ci
from netsim.analysis.temporal import (jaccard, joint_connectivity_window, link_metrics,
                                      rounds_to_connect, stabilisation_round, stability,
                                      strongly_connected, union_connected)

__all__ = ["analyze", "asymmetry", "collab_graph", "community_analysis", "community_scores",
           "components", "degree_distribution", "density", "detect_communities",
           "edge_precision_recall", "edges", "export_graphml", "format_table", "graph_metrics",
           "graph_series", "group_shares", "in_degree", "jaccard", "joint_connectivity_window",
           "link_metrics", "link_share", "mean_ci", "mixing_matrix", "oracle_matrix",
           "out_degree", "reciprocity", "robustness_table", "rounds_to_connect", "spectral",
           "stabilisation_round", "stability", "strongly_connected", "union_connected",
           "write_analysis"]
