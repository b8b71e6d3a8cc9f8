"""networkx analyses of collaboration graphs (from W) and realised communication graphs.

Graph measures: ``graphs`` (W as edges, oracle, group shares), ``metrics`` (density,
reciprocity, spectra, ...), ``communities``, ``recovery`` (mass precision and community ARI of
W as learned), ``temporal`` (stability, joint connectivity),
``stats`` (confidence intervals). A results folder: ``folder`` (its runs and each seed's ground
truth), ``series`` (accuracy curves, graph metrics per evaluation), ``per_run`` (``analyze``),
``table`` (the printed table; ``columns`` defines its rows), ``export`` (analysis.json/csv, GraphML). Robustness tables over
several folders: :mod:`netsim.analysis.sweep_table`.

The names below are imported on first use (:mod:`netsim.util.lazy`), so what needs one analysis
(the end of every run: ``graphs``) does not load the others' scikit-learn, pandas and scipy.
"""
from netsim.util.lazy import lazy_getattr

#: submodule -> the names it exports here
_EXPORTS = {
    "communities": ("adjusted_rand", "community_analysis", "community_scores",
                    "detect_communities"),
    "export": ("export_graphml", "write_analysis"),
    "graphs": ("collab_graph", "edge_precision_recall", "edges", "group_shares", "link_share",
               "oracle_matrix"),
    "metrics": ("asymmetry", "components", "degree_distribution", "density", "graph_metrics",
                "in_degree", "mixing_matrix", "out_degree", "reciprocity", "spectral"),
    "per_run": ("analyze",),
    "recovery": ("community_ari", "mass_precision", "outer_affinity", "recovery_scores"),
    "series": ("graph_series",),
    "stats": ("mean_ci",),
    "table": ("format_table",),
    "temporal": ("jaccard", "joint_connectivity_window", "link_metrics", "rounds_to_connect",
                 "stabilisation_round", "stability", "strongly_connected", "union_connected"),
}
__getattr__ = lazy_getattr(__name__, {name: f"{__name__}.{module}"
                                      for module, names in _EXPORTS.items() for name in names})
__all__ = sorted(name for names in _EXPORTS.values() for name in names)
