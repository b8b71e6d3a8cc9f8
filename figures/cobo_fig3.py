"""CoBo Fig. 3: collaboration matrices learned by Federated Clustering, IFCA and CoBo at
different stages of training (cross-silo: 8 clients in 4 clusters), diagonal masked, next to the
oracle block matrix. Reads results/cobo_cross_silo."""
from common import client_table, first_seed, parse, present, report

from netsim.plot.matrices import plot_collaboration_grid

res, out = parse("cobo_cross_silo", __doc__)
cluster, _ = client_table(res)
rows = {}
for label in present(res, ["fc", "ifca", "cobo"]):
    c = res.arrays("collab", label, first_seed(res, label))
    rows[label] = (c["W"], c["rounds"])
report(plot_collaboration_grid(rows, out / "cobo_fig3_collaboration.png", cluster, pdf=True))
