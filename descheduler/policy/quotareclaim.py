"""Arguments of the QuotaReclaim strategy (quotareclaim.md §2–4)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from descheduler.policy.fields import NonNegativeInt, PolicyModel


class QuotaReclaimArgs(PolicyModel):
    """Give quota groups below their min back the capacity they lent; trim groups over their max."""

    pending_grace_seconds: NonNegativeInt = Field(
        default=60, description="a pending pod triggers reclaim only after waiting this long"
    )
    over_max_delay_seconds: NonNegativeInt = Field(
        default=120, description="a group must be over its max this long before it is trimmed"
    )
    reclaim_policy: Literal["Any", "LowerPriority"] = Field(
        default="Any",
        description="Any: the guarantee outranks priority; LowerPriority: only lower-priority victims",
    )
    lender_floor: Literal["Strict", "NetGain", "None"] = Field(
        default="Strict", description="whether a reclaim may push a lender below its own min"
    )
    hierarchy_order: Literal["TopDown", "SiblingsFirst"] = Field(
        default="TopDown", description="which lenders in the quota tree are asked first"
    )
    aggregate_min_gate: bool = Field(
        default=False, description="cap free capacity by Σ top-level min − Σ top-level used"
    )
    max_evictions_per_round: NonNegativeInt = 10
    max_evictions_per_lender: NonNegativeInt | None = None
    lender_cooldown_seconds: NonNegativeInt = Field(
        default=0, description="wait this long after a lender's previous victims before taking more"
    )
    backoff_seconds: NonNegativeInt = Field(
        default=300, description="pause a (starving, lender) pair after a reclaim that made no progress"
    )
    dry_run: bool = Field(default=False, description="plan and report reclaims without evicting")
    quota_label: str = Field(default="quota.scheduling.koordinator.sh/name", min_length=1)
    parent_label: str = Field(default="quota.scheduling.koordinator.sh/parent", min_length=1)
