"""Priority bands and prod class (Koordinator-compatible, lownodeload.md §4)."""

from __future__ import annotations

from descheduler.model import ANNOTATION_DELETION_COST, LABEL_PRIORITY_CLASS, Pod, PriorityBand

_BANDS: tuple[tuple[int, int, PriorityBand], ...] = (
    (9000, 9999, "koord-prod"),
    (7000, 7999, "koord-mid"),
    (5000, 5999, "koord-batch"),
    (3000, 3999, "koord-free"),
)
_LABELS: dict[str, PriorityBand] = {
    "koord-prod": "koord-prod",
    "koord-mid": "koord-mid",
    "koord-batch": "koord-batch",
    "koord-free": "koord-free",
}
# Victim order: free < batch < mid < prod < none (lownodeload.md §5).
BAND_RANK: dict[PriorityBand, int] = {"koord-free": 0, "koord-batch": 1, "koord-mid": 2, "koord-prod": 3, "none": 4}


def priority_band(pod: Pod) -> PriorityBand:
    """The label wins, then the spec.priority band; `none` when neither says."""
    label = _LABELS.get(pod.labels.get(LABEL_PRIORITY_CLASS, ""))
    if label is not None:
        return label
    if pod.priority is not None:
        for low, high, band in _BANDS:
            if low <= pod.priority <= high:
                return band
    return "none"


def is_prod(pod: Pod) -> bool:
    """Prod class: the prod band; with no band, Burstable and Guaranteed pods are prod."""
    band = priority_band(pod)
    if band != "none":
        return band == "koord-prod"
    return pod.qos != "BestEffort"


def annotated_cost(pod: Pod, annotation: str) -> int:
    """An integer cost annotation (pod-deletion-cost, eviction-cost); 0 when absent or not an integer."""
    try:
        return int(pod.annotations.get(annotation, "0"))
    except ValueError:
        return 0


def importance(pod: Pod | None) -> tuple[int, ...]:
    """Lower is less important and moves first: priority band, priority, pod-deletion-cost."""
    if pod is None:
        return (-1,)
    return (BAND_RANK[priority_band(pod)], pod.priority or 0, annotated_cost(pod, ANNOTATION_DELETION_COST))
