"""The load-aware scheduling core shared by the strategies, the migration controller and the extender."""

from descheduler.scheduling.core import Choice, best_node, feasible_mask, refusal, score, scores
from descheduler.scheduling.estimator import estimate, estimate_pod
from descheduler.scheduling.table import NodeTable, build_table
from descheduler.scheduling.view import ClusterView

__all__ = [
    "Choice",
    "ClusterView",
    "NodeTable",
    "best_node",
    "build_table",
    "estimate",
    "estimate_pod",
    "feasible_mask",
    "refusal",
    "score",
    "scores",
]
