"""CoBo Fig. 6: mean test accuracy of the personalised models vs rounds (cross-device, 80
clients), every method of the scenario, 95% CI bands over seeds. Reads results/cobo_cross_device."""
from common import parse, present, report

from netsim.analysis.series import accuracy_curves
from netsim.plot import plot_accuracy

res, out = parse("cobo_cross_device", __doc__)
order = present(res, ["cobo", "oracle", "ditto", "fedavg_ft", "local", "fedavg", "ifca"], None)
report(plot_accuracy(accuracy_curves(res), out / "cobo_fig6_accuracy.png", "round", True, order))
