"""The Prometheus series the controller exposes (runtime.md §6).

One module so every part counts into the same series: prefix `descheduler_`, base units, counters
end in `_total`, no per-pod labels. Everything registers on `REGISTRY`, a registry of our own, so
tests and the simulator can read values without the process-wide default registry's collectors.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from descheduler import __version__

REGISTRY = CollectorRegistry(auto_describe=True)

BUILD_INFO = Info("descheduler_build", "Version of the running descheduler.", registry=REGISTRY)
BUILD_INFO.info({"version": __version__})

CYCLES = Counter(
    "descheduler_cycles_total",
    "Planning cycles run, by result (planned, skipped: cache not synced or load unreadable, error).",
    ["result"],
    registry=REGISTRY,
)
CYCLE_DURATION = Histogram(
    "descheduler_cycle_duration_seconds",
    "Wall time of one planning cycle.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
    registry=REGISTRY,
)
MIGRATIONS = Counter(
    "descheduler_migrations_total",
    "Pod migrations by strategy and result (planned, submitted, succeeded, failed, aborted; elsewhere: failed "
    "because the replacement was bound elsewhere than planned, off its Reservation or back on its source).",
    ["strategy", "result"],
    registry=REGISTRY,
)
EVICTIONS = Counter(
    "descheduler_evictions_total",
    "Eviction calls by result (success, pdb_blocked, error).",
    ["result"],
    registry=REGISTRY,
)
JOBS = Gauge(
    "descheduler_migration_jobs",
    "PodMigrationJobs in the cluster by phase.",
    ["phase"],
    registry=REGISTRY,
)
NODES = Gauge(
    "descheduler_nodes",
    "Nodes by classification in the last cycle (high, low, normal, excluded).",
    ["class"],
    registry=REGISTRY,
)
CACHE_OBJECTS = Gauge(
    "descheduler_cache_objects",
    "Objects held in the list-watch cache, by resource.",
    ["resource"],
    registry=REGISTRY,
)
WATCH_RESTARTS = Counter(
    "descheduler_watch_restarts_total",
    "Watch streams restarted, by resource and reason (closed, gone, error).",
    ["resource", "reason"],
    registry=REGISTRY,
)
API_REQUESTS = Counter(
    "descheduler_api_requests_total",
    "Kubernetes API requests by verb and HTTP status code.",
    ["verb", "code"],
    registry=REGISTRY,
)
LEADER = Gauge("descheduler_leader", "1 while this replica holds the leader lease, else 0.", registry=REGISTRY)
RESERVATION_SCHEDULER = Gauge(
    "descheduler_reservation_scheduler",
    "1 while a reservation-aware scheduler renews its Lease, 0 when none does (moves evict without a Reservation).",
    registry=REGISTRY,
)
MOVES_WITHOUT_RESERVATION = Counter(
    "descheduler_moves_without_reservation_total",
    "Moves made without a Reservation, by cause: absent (no reservation-aware scheduler renewed its Lease "
    "within the grace), unserved (it does not serve the pod's schedulerName), policy (reservationScheduler.expect "
    "is Absent).",
    ["cause"],
    registry=REGISTRY,
)
POLICY_RELOADS = Counter(
    "descheduler_policy_reload_total",
    "Policy file reloads by result (success, error).",
    ["result"],
    registry=REGISTRY,
)
POLICY_REJECTED = Gauge(
    "descheduler_policy_rejected",
    "1 while the policy file's current content is rejected (the last valid policy stays in force), else 0.",
    registry=REGISTRY,
)
CYCLE_INTERVAL = Gauge(
    "descheduler_cycle_interval_seconds",
    "The policy's interval between planning cycles.",
    registry=REGISTRY,
)
LAST_CYCLE = Gauge(
    "descheduler_last_cycle_timestamp_seconds",
    "Unix time the last cycle that planned ended (0: none in this process, e.g. a standby replica).",
    registry=REGISTRY,
)
DRY_RUN = Gauge(
    "descheduler_dry_run",
    "1 while cycles only plan and report (--dry-run or the policy's dryRun), else 0.",
    registry=REGISTRY,
)
# Pools come from the policy's LowNodeLoad nodePools (plus "default"), so the label is bounded by it.
POOL_NODES = Gauge(
    "descheduler_pool_nodes",
    "Nodes by LowNodeLoad node pool and classification in the last cycle (high, low, normal, excluded).",
    ["pool", "class"],
    registry=REGISTRY,
)
POOL_HOT_STREAK = Gauge(
    "descheduler_pool_hot_streak_cycles",
    "The most consecutive cycles any node of the pool has been hot, as of the last cycle (0: none is hot).",
    ["pool"],
    registry=REGISTRY,
)
# Codes are the refusal codes defined in the code (descheduler/refusal.py), strategies the policy's.
SKIPS = Counter(
    "descheduler_skips_total",
    "Pods a strategy considered and did not move, by strategy and refusal code, summed over cycles.",
    ["strategy", "code"],
    registry=REGISTRY,
)
# Groups and lenders are ElasticQuota names: bounded by the quotas the cluster has.
QUOTA_RECLAIM_NO_PROGRESS = Counter(
    "descheduler_quota_reclaim_no_progress_total",
    "QuotaReclaim rounds whose victims are gone while the waiting group's pods still wait and the group "
    "got nothing (the freed room was taken by other pods), by waiting group and lender.",
    ["group", "lender"],
    registry=REGISTRY,
)
LOAD_SOURCE_ERRORS = Counter(
    "descheduler_load_source_errors_total",
    "Load readings that failed (the cycle is skipped), by the policy's loadSource type.",
    ["source"],
    registry=REGISTRY,
)
# Moves without a Reservation: a PreferNoSchedule taint of ours steers a stock scheduler's
# replacements off the source node while its moves are in flight (migration.md §3).
SOURCE_TAINTS = Counter(
    "descheduler_source_taints_total",
    "Moving-off taints (PreferNoSchedule) put on source nodes of moves without a Reservation, or removed "
    "once those moves ended, by action (added, removed).",
    ["action"],
    registry=REGISTRY,
)

REPLACEMENT_PENDING = Gauge(
    "descheduler_replacement_pending_seconds",
    "How long the longest-waiting replacement of a pod the descheduler evicted has been Pending since that "
    "eviction, as of the last cycle (0: none is Pending).",
    registry=REGISTRY,
)

# Results known in advance start at 0, so rate() and increase() see the first one (a counter
# born at 1 shows no increase) and dashboards show 0 rather than no data.
for _result in ("planned", "skipped", "error"):
    CYCLES.labels(_result)
for _result in ("success", "pdb_blocked", "error"):
    EVICTIONS.labels(_result)
for _result in ("success", "error"):
    POLICY_RELOADS.labels(_result)
for _action in ("added", "removed"):
    SOURCE_TAINTS.labels(_action)
for _cause in ("absent", "unserved", "policy"):
    MOVES_WITHOUT_RESERVATION.labels(_cause)


# The kube-scheduler extender (`descheduler extender`).
EXTENDER_REQUESTS = Counter(
    "descheduler_extender_requests_total",
    "Extender HTTP requests by verb (filter, prioritize, other) and HTTP status code.",
    ["verb", "code"],
    registry=REGISTRY,
)
EXTENDER_REQUEST_DURATION = Histogram(
    "descheduler_extender_request_duration_seconds",
    "Time to answer one extender request, from the request line to the last byte written.",
    ["verb"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
    registry=REGISTRY,
)
EXTENDER_REFRESHES = Counter(
    "descheduler_extender_refreshes_total",
    "Rebuilds of the extender's cluster state by result (success, error: the last state stays in force).",
    ["result"],
    registry=REGISTRY,
)
EXTENDER_ASSUMED_PODS = Gauge(
    "descheduler_extender_assumed_pods",
    "Pods seen bound since the extender's last snapshot, counted on their nodes until a snapshot includes them.",
    registry=REGISTRY,
)
EXTENDER_NODES = Gauge(
    "descheduler_extender_nodes",
    "Nodes in the extender's current cluster state.",
    registry=REGISTRY,
)
EXTENDER_LEASE_RENEWALS = Counter(
    "descheduler_extender_lease_renewals_total",
    "Renewals of the scheduler Lease by result (ok; forbidden: RBAC refused, 403; error: anything else).",
    ["result"],
    registry=REGISTRY,
)
EXTENDER_LEASE_RENEWED = Gauge(
    "descheduler_extender_lease_renewed_timestamp_seconds",
    "Unix time of this extender's last successful renewal of the scheduler Lease (0: none yet).",
    registry=REGISTRY,
)
EXTENDER_TLS_HANDSHAKE_FAILURES = Counter(
    "descheduler_extender_tls_handshake_failures_total",
    "TLS handshakes refused or lost on the extender's HTTPS listener, by reason (no_certificate; bad_certificate: "
    "not of the client CA, expired, ...; protocol: not TLS, or too old; timeout; closed: the client went away; other).",
    ["reason"],
    registry=REGISTRY,
)
for _result in ("ok", "forbidden", "error"):
    EXTENDER_LEASE_RENEWALS.labels(_result)
for _reason in ("no_certificate", "bad_certificate", "protocol", "timeout", "closed", "other"):
    EXTENDER_TLS_HANDSHAKE_FAILURES.labels(_reason)
EXTENDER_BINDS_REFUSED = Counter(
    "descheduler_extender_binds_refused_total",
    "Bind requests the extender refused by the check that failed (reason: the refusal code, e.g. "
    "TaintNotTolerated, NodeAffinity, BindSchedulerNameNotServed): a binding kube-scheduler's filters would not make.",
    ["reason"],
    registry=REGISTRY,
)

EXTENDER_RESERVATIONS_FAILED = Counter(
    "descheduler_extender_reservations_failed_total",
    "Reservations the extender failed so that their job ends at once, by reason (ReplacementElsewhere: the "
    "replacement was bound on another node; ReservedNodeRefused: kube-scheduler's own filters refused the "
    "reserved node for it).",
    ["reason"],
    registry=REGISTRY,
)
EXTENDER_LOAD_FILTER_WAIVED = Counter(
    "descheduler_extender_load_filter_waived_total",
    "Filter answers that passed nodes only the load filter refused, because it refused every node kube-scheduler "
    "passed (the pod would have stayed Pending where kube-scheduler alone binds it), by pod (owner: it owns a "
    "Reservation, a moved pod's replacement; other).",
    ["pod"],
    registry=REGISTRY,
)
for _reason in ("ReplacementElsewhere", "ReservedNodeRefused"):
    EXTENDER_RESERVATIONS_FAILED.labels(_reason)
for _kind in ("owner", "other"):
    EXTENDER_LOAD_FILTER_WAIVED.labels(_kind)


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    """The current value of one series (0 when it has not been touched): for tests and reports."""
    value = REGISTRY.get_sample_value(name, labels or {})
    return 0.0 if value is None else value
