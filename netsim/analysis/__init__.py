"""networkx analyses of collaboration graphs (from W) and realised communication graphs.

Graph measures: ``graphs`` (W as edges, oracle, group shares), ``metrics`` (density,
reciprocity, spectra, ...), ``communities``, ``temporal`` (stability, joint connectivity),
``stats`` (confidence intervals). A results folder: ``folder`` (its runs and each seed's ground
truth), ``series`` (accuracy curves, graph metrics per evaluation), ``per_run`` (``analyze``),
``table`` (the printed table; ``columns`` defines its rows), ``export`` (analysis.json/csv, GraphML). Robustness tables over
several folders: :mod:`netsim.sweep_table`.
"""
from netsim.analysis.communities import community_analysis, community_scores, detect_communities
from netsim.analysis.export import export_graphml, write_analysis
from netsim.analysis.graphs import (collab_graph, edge_precision_recall, edges, group_shares,
                                    link_share, oracle_matrix)
from netsim.analysis.metrics import (asymmetry, components, degree_distribution, density,
                                     graph_metrics, in_degree, mixing_matrix, out_degree,
                                     reciprocity, spectral)
from netsim.analysis.per_run import analyze
from netsim.analysis.series import graph_series
from netsim.analysis.stats import mean_ci
from netsim.analysis.table import format_table
from netsim.analysis.temporal import (jaccard, joint_connectivity_window, link_metrics,
                                      rounds_to_connect, stabilisation_round, stability,
                                      strongly_connected, union_connected)

__all__ = ["analyze", "asymmetry", "collab_graph", "community_analysis", "community_scores",
           "components", "degree_distribution", "density", "detect_communities",
           "edge_precision_recall", "edges", "export_graphml", "format_table", "graph_metrics",
           "graph_series", "group_shares", "in_degree", "jaccard", "joint_connectivity_window",
           "link_metrics", "link_share", "mean_ci", "mixing_matrix", "oracle_matrix",
           "out_degree", "reciprocity", "rounds_to_connect", "spectral",
           "stabilisation_round", "stability", "strongly_connected", "union_connected",
           "write_analysis"]
