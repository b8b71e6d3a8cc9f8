"""What every scalar column of ``netsim analyze`` (analysis.json, analysis.csv, the printed
table) means, one line each, for the generated reference (docs/reference.md).

``share_<a>_uses_<b>`` stands for one column per ordered pair of client groups.
"""
from __future__ import annotations

COLUMNS: dict[str, str] = {
    "final_accuracy": "mean test accuracy over clients at the last evaluation",
    "final_loss": "mean test loss over clients at the last evaluation (regression tasks)",
    "sim_time": "simulated time at the last evaluation (s)",
    "time_to_target": "with --target ACC: simulated time of the first evaluation whose mean "
                      "test accuracy is >= ACC (loss <= ACC for regression); nan if never",
    "round_to_target": "with --target ACC: round of that evaluation; nan if never",
    "n_edges": "edges of the final collaboration graph (j -> i where W[i, j] > threshold)",
    "density": "edges / (N (N - 1))",
    "sparsity": "1 - density",
    "reciprocity": "share of edges whose reverse edge is present",
    "asymmetry": "share of edges, in %, whose reverse edge is absent: 100 (1 - reciprocity)",
    "in_degree_mean": "mean in-degree (collaborators a client uses)",
    "in_degree_min": "smallest in-degree",
    "in_degree_max": "largest in-degree",
    "out_degree_min": "smallest out-degree (clients that use a given client)",
    "out_degree_max": "largest out-degree",
    "n_strong": "strongly connected components",
    "n_weak": "weakly connected components",
    "largest_strong": "size of the largest strongly connected component",
    "largest_weak": "size of the largest weakly connected component",
    "strongly_connected": "1 if the graph is strongly connected, else 0",
    "slem": "second-largest eigenvalue modulus of the row-normalised mixing matrix of W",
    "spectral_gap": "1 - slem",
    "mixing_time": "1 / spectral_gap rounds (inf when the gap is 0)",
    "n_communities": "communities found (Louvain on the symmetrised weighted graph)",
    "modularity": "modularity of those communities",
    "ari": "adjusted Rand index of the communities against the ground-truth clusters",
    "nmi": "normalised mutual information of the communities against the clusters",
    "precision": "share of edges that join clients of the same ground-truth cluster",
    "recall": "share of same-cluster pairs that are edges",
    "mass_precision": "share of each client's weight on the others that stays in its cluster, "
                      "mean over clients (final W as learned, no threshold, self-weight left "
                      "out; nan when no client gives weight to others)",
    "community_ari": "adjusted Rand index against the clusters of the Louvain communities of "
                     "(W + W^T) / 2 (final W as learned, no threshold, diagonal left out; "
                     "Louvain seeded with the run's seed)",
    "outer_precision": "outer/ arrays (PDBO-MTL's softmax(lambda_i)): share of the pairs of "
                       "clients whose largest outer weight is on the same learner that are "
                       "same-cluster pairs, at the last outer step",
    "outer_recall": "share of the same-cluster pairs whose largest outer weights are on the same "
                    "learner, at the last outer step",
    "outer_mass_precision": "mass_precision of the outer weights' affinity W_ij = sum_k "
                            "pi_ik pi_jk (the chance that i and j draw the same learner), at "
                            "the last outer step",
    "outer_community_ari": "community_ari of that affinity, at the last outer step",
    "outer_max_weight": "largest outer weight of a client, mean over clients, at the last outer "
                        "step (1 / K: uniform mixtures; 1: one learner each)",
    "outer_learners": "learners that are some client's largest outer weight, at the last outer "
                      "step",
    "share_<a>_uses_<b>": "of the collaborators clients of group a use, the share in group b",
    "jaccard_mean": "mean Jaccard index of the edge sets of consecutive evaluations",
    "stable_from": "first evaluation round from which every consecutive Jaccard index is >= "
                   "the stability tolerance (0.9); nan if the graph still changes more",
    "link_density": "mean over rounds of the density of the delivered links",
    "link_asymmetry": "mean over rounds of the asymmetry % of the delivered links",
    "rounds_to_connect": "rounds from round 0 until the union of the delivered links is "
                         "strongly connected; nan if never",
    "joint_window": "smallest B such that every window of B consecutive rounds has a strongly "
                    "connected union of delivered links; nan if none",
    "bytes_per_client": "bytes a client sent over the run, mean over clients",
    "bytes_per_client_max": "bytes sent by the client that sent the most",
    "server_bytes": "bytes the server sent (server algorithms)",
    "peers_per_round": "distinct senders a client accepted per round, mean over rounds and clients",
    "messages_per_client": "messages sent by all nodes / N",
}
