"""Which nodes a list of ORed NodeSelectorTerms selects, as one array over the node table: the
pod's required node affinity, a PersistentVolume's node affinity, a StorageClass's
allowedTopologies, an allocated ResourceClaim's node selector."""

from __future__ import annotations

import numpy as np

from descheduler.model import NodeSelectorTerm
from descheduler.scheduling.table import BoolArray, NodeTable


def terms_mask(table: NodeTable, terms: tuple[NodeSelectorTerm, ...]) -> BoolArray:
    """Nodes any term selects (the requirements of a term ANDed; an empty term selects none), read
    through the label index: one pass per requirement, never per node."""
    n = table.size
    index = table.label_index()
    selected = np.zeros(n, dtype=np.bool_)
    for term in terms:
        if not term.match_expressions and not term.match_fields:
            continue
        term_mask = np.ones(n, dtype=np.bool_)
        for req in term.match_expressions:
            values = index.get(req.key, {})
            hit = np.zeros(n, dtype=np.bool_)
            for value, rows in values.items():
                if req.matches(value):
                    hit[rows] = True
            if req.matches(None):  # NotIn / DoesNotExist also match nodes without the key
                has_key = np.zeros(n, dtype=np.bool_)
                for rows in values.values():
                    has_key[rows] = True
                hit |= ~has_key
            term_mask &= hit
        for req in term.match_fields:
            term_mask &= np.array([req.matches(name if req.key == "metadata.name" else None) for name in table.names])
        selected |= term_mask
    return selected


def cached_terms_mask(table: NodeTable, terms: tuple[NodeSelectorTerm, ...]) -> BoolArray:
    """`terms_mask`, once per table for equal terms (volumes of one zone share theirs)."""
    found = table.rule_cache.get(("terms", terms))
    if found is None:
        found = table.rule_cache[("terms", terms)] = terms_mask(table, terms)
    assert isinstance(found, np.ndarray)
    return found
