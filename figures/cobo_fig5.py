"""CoBo Fig. 5: collaboration matrices learned by CoBo at different stages of training
(cross-device: 80 clients in 10 clusters of sizes 6..10), diagonal masked, next to the oracle.
Reads results/cobo_cross_device."""
from common import client_table, first_seed, parse, present, report

from netsim.plot.matrices import plot_collaboration

res, out = parse("cobo_cross_device", __doc__)
cluster, _ = client_table(res)
label = present(res, ["cobo"])[0]
c = res.arrays("collab", label, first_seed(res, label))
report(plot_collaboration(c["W"], c["rounds"], out / "cobo_fig5_collaboration.png", "CoBo",
                          cluster, pdf=True))
