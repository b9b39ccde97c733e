"""Which pods may ever be moved (lownodeload.md §2): the evictor's switchable rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Self

from pydantic import Field, ModelWrapValidatorHandler, model_validator

from descheduler.policy.crossfield import PartialInput, Problem, cross_field_rules
from descheduler.policy.fields import Duration, PolicyModel, Selector


class NamespaceFilter(PolicyModel):
    """`{include: [...]}` or `{exclude: [...]}`, exactly one of them."""

    include: list[str] | None = Field(default=None, description="only these namespaces")
    exclude: list[str] | None = Field(default=None, description="every namespace except these")

    @model_validator(mode="wrap")
    @classmethod
    def _exactly_one(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return cross_field_rules(data, handler, _exactly_one_of_include_or_exclude)

    def allows(self, namespace: str) -> bool:
        if self.include is not None:
            return namespace in self.include
        return namespace not in (self.exclude or ())


def _exactly_one_of_include_or_exclude(namespaces: PartialInput) -> Iterator[Problem]:
    # A list that failed validation was still given: it counts as set.
    if (namespaces.value("include") is None) == (namespaces.value("exclude") is None):
        yield (), "set exactly one of include or exclude", None


class MakeBeforeBreakArgs(PolicyModel):
    """Moves of a single-replica Deployment's pod that start the replacement first (migration.md §3)."""

    enabled: bool = Field(
        default=False,
        description=(
            "move the pod of a single-replica Deployment (which minReplicas would keep) by a rollout that "
            "starts its replacement on the Reservation's node and removes the pod only once that is Ready"
        ),
    )
    deployment_selector: Selector | None = Field(
        default=None, description="only Deployments whose labels match this selector (default: every one)"
    )


class EvictorArgs(PolicyModel):
    """Switchable rules for which pods may be moved at all; the hard rules are not configurable."""

    evict_bare_pods: bool = Field(default=False, description="move pods no controller would recreate")
    evict_system_critical_pods: bool = Field(default=False, description="move pods with priority ≥ 2000000000")
    evict_local_storage_pods: bool = Field(default=False, description="move pods with emptyDir/hostPath volumes")
    ignore_pvc_pods: bool = Field(default=False, description="never move pods that use PersistentVolumeClaims")
    priority_threshold: int | None = Field(default=None, description="never move pods at or above this priority")
    min_pod_age: Duration | None = Field(default=None, description="never move pods younger than this")
    min_replicas: int = Field(default=2, ge=1, description="never move pods of workloads with fewer replicas")
    label_selector: Selector | None = Field(default=None, description="only move pods matching this selector")
    namespaces: NamespaceFilter | None = Field(default=None, description="only move pods in these namespaces")
    make_before_break: MakeBeforeBreakArgs = Field(default_factory=MakeBeforeBreakArgs)
