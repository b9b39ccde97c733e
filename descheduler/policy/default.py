"""The default policy text, kept identical to config/policy.yaml (a test checks it).

A Python constant rather than a data file so that every installation carries it.
"""

DEFAULT_POLICY_YAML = """\
# The default DeschedulerPolicy: what the descheduler does when no policy file is given.
#
# Mount your own as a ConfigMap and pass it with `--policy FILE`; it is re-read within one
# interval of a change, and an invalid new version is rejected (with every problem listed) while
# the last valid one stays in force. Check a file with `descheduler policy validate FILE`.
# Schema: config/policy.schema.json. Keys are camelCase; unknown keys are errors.
# Durations are Go-style strings ("60s", "5m", "1h30m", "500ms") or whole seconds (60).
# Percentages are numbers from 0 to 100 — 80, not "80" and not 0.8.
# Every value below that is not commented out is the built-in default unless noted.
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy

# Time between cycles; each cycle reads one snapshot of the cluster and its load.
interval: 60s

# true: plan and report every cycle, but create no PodMigrationJobs and evict nothing.
dryRun: false

# Where node and pod load comes from. One of:
#   {type: metricsServer}   metrics.k8s.io (metrics-server); instant values.
#   {type: nodeMetric}      Koordinator NodeMetric objects (system usage, percentile aggregates).
#   {type: prometheus, address: http://prometheus.monitoring:9090, ...}
#     bearerTokenFile: (none)   file with a bearer token for the Prometheus API
#     timeout: 10s              per query
#     window: 5m                rate() window, replaces $window in the queries
#     percentile: (none)        e.g. 0.95: quantile_over_time over the window instead of instant values
#     nodeLabel: instance       label that carries the node name in node query results
#     queries: {nodeCpu, nodeMemory, podCpu, podMemory}   PromQL; defaults use node_exporter
#       (node_cpu_seconds_total idle, node_memory_MemAvailable_bytes) and cAdvisor
#       (container_cpu_usage_seconds_total, container_memory_working_set_bytes)
loadSource:
  type: metricsServer

# Which nodes the descheduler looks at at all. A label selector {matchLabels, matchExpressions},
# or a plain map {label: value} as shorthand for matchLabels. Empty or absent: every node.
nodeSelector: {}

# Which pods may ever be moved, by any strategy. Never moved, whatever is set here: DaemonSet
# pods, mirror and static pods, terminating or finished pods, pods with eviction-cost 2147483647.
# The pod annotation descheduler.alpha.kubernetes.io/evict: "true" overrides the switches below.
evictor:
  evictBarePods: false              # pods without a controller owner (nothing would recreate them)
  evictSystemCriticalPods: false    # pods with priority >= 2000000000
  evictLocalStoragePods: false      # pods with emptyDir or hostPath volumes
  ignorePvcPods: false              # true: never move pods that use PersistentVolumeClaims
  minReplicas: 2                    # single-replica workloads are not moved
  # priorityThreshold: 10000        # never move pods at or above this priority (default: none)
  # minPodAge: 10m                  # never move pods younger than this (default: none)
  # labelSelector: {matchLabels: {descheduler.dev/movable: "true"}}   # default: every pod
  # namespaces: {exclude: [kube-system]}   # {include: [...]} or {exclude: [...]}, not both
  makeBeforeBreak:                  # the pod of a single-replica Deployment, moved without downtime
    enabled: false                  # true: such a pod (kept by minReplicas) is moved by a rollout that
    #                               # starts its replacement on the Reservation's node first (README);
    #                               # the rollout writes the Deployment, which deploy/base does not
    #                               # grant: add deploy/components/make-before-break (it sets this too)
    # deploymentSelector: {matchLabels: {descheduler.dev/make-before-break: "true"}}   # default: every one

# Moves one cycle may plan. Absent = no limit; 0 = no moves.
limits:
  maxEvictionsPerCycle: 10          # default: no limit; or a share of the nodes considered, "5%" (rounded up)
  maxEvictionsPerNode: 2            # default: no limit
  # maxEvictionsPerNamespace: 5     # default: no limit
  # maxEvictionsPerHour: "4%"       # a churn budget over any hour, a count or a share of the nodes
  #                                 # (default: none); counts the jobs kept (jobRetention >= 1h)

# The load-aware scheduling core, shared with the scheduler extender so the descheduler and the
# scheduler agree on what "too hot" means.
scheduling:
  # A node is not a target when its estimated usage after the placement would exceed these
  # percents of allocatable (0 = do not check that resource).
  usageThresholds: {cpu: 65, memory: 95}
  # prodUsageThresholds: {cpu: 55}  # prod-class pods: check the summed usage of prod pods instead
  # aggregated:                     # filter on a percentile when the load source provides one
  #   usageThresholds: {cpu: 60}
  #   usageAggregationType: p95     # avg | p50 | p90 | p95 | p99
  #   usageAggregatedDuration: 5m   # default: the longest window the source reports
  nodeMetricExpirationSeconds: 180  # a node metric older than this is stale
  filterExpiredNodeMetrics: true    # stale node: not a target (a pod's own reserved room excepted)...
  enableScheduleWhenNodeMetricsExpired: false   # ...unless this is true
  # A new pod's usage is estimated as this percent of its limit (or request when it has no limit).
  estimatedScalingFactors: {cpu: 85, memory: 70}
  # Node score: weighted mean of free percent per resource (+ dominantResourceWeight x the scarcest).
  resourceWeights: {cpu: 1, memory: 1}
  dominantResourceWeight: 0

strategies:
  # Move load off hot nodes (above highThresholds) onto cool ones (below lowThresholds).
  # Argument names are Koordinator's LowNodeLoad names (see lownodeload.md).
  - name: LowNodeLoad
    args:
      # Percent of allocatable. A node is low when it is at or below lowThresholds on every
      # resource named, high when it is above highThresholds on any. Only named resources count;
      # name each resource in both maps (cpu, memory, pods, ephemeral-storage, nvidia.com/gpu, ...).
      lowThresholds: {cpu: 45, memory: 55}
      highThresholds: {cpu: 70, memory: 80}
      useDeviationThresholds: false  # true: the values are offsets below/above the pool's mean usage
      # prodLowThresholds: {cpu: 35}  # second pass on the usage of prod-class pods only;
      # prodHighThresholds: {cpu: 55} # prodLow <= prodHigh <= high
      numberOfNodes: 0               # act only when more than this many nodes are low
      # evictableNamespaces: {exclude: [kube-system]}   # {include: [...]} or {exclude: [...]}
      podSelectors: []               # [{name, selector}]: a candidate must match at least one
      # nodeSelector: {matchLabels: {node-role.kubernetes.io/worker: ""}}   # default: every node
      nodeFit: true                  # move a pod only where it fits and the target stays <= high
      # resourceWeights: {cpu: 1, memory: 1}   # ordering weights; default 1 per threshold resource
      anomalyCondition:
        consecutiveAbnormalities: 1  # cycles a node must be hot in a row before it is relieved
      # Pools with their own thresholds; a node belongs to the first pool that selects it; fields
      # left out inherit the values above; nodes no pool selects form the pool "default".
      nodePools: []
      #  - name: gpu
      #    nodeSelector: {nvidia.com/gpu.present: "true"}
      #    lowThresholds: {cpu: 30, memory: 40, nvidia.com/gpu: 50}
      #    highThresholds: {cpu: 60, memory: 75, nvidia.com/gpu: 90}
      # Order in which a hot node's pods are picked (first = moved first); reorder or drop keys.
      podSortKeys: [priorityClass, priority, qos, deletionCost, evictionCost, usageFit, age, name]
      victimSelection: greedy        # greedy | minimal (smallest set that brings the node to its goal)
      # Pods started less than this ago are moved after every other candidate (0s: off): a
      # replacement moved again soon after its move is churn. It halved ping-pong moves on the
      # quality benchmark's trace clusters (8 to 4) at the same hot-node-minutes.
      recentPodsLast: 1h
      # Judge a node by its usage this far ahead, so a node on a ramp is relieved before it crosses
      # high: "cpu 66% rising to 74% in 10m > high 70%" (and a target must stay cool as it rises).
      # 0s: off. lookAheadBasis says whose rise: "cluster" (every node in proportion to its usage,
      # at the rate the whole cluster's usage rose over each of the last two lookAhead spans; a ramp
      # the cluster shares, as the morning's, where one pod's burst barely moves the total) or
      # "pods" (each node by its own pods that rose over both of the last two cycles). On the
      # quality benchmark 10m on the cluster cut hot-node-minutes by 67% where load follows the day
      # (openb at 300 nodes) and 7% on bursty VMs with a day shape, for 2-15% more evictions, and
      # changed little without a shared ramp; "pods" extrapolated bursts (more evictions, more
      # ping-pong). The rise is known once two spans have been read (20m for 10m).
      lookAhead: 10m
      lookAheadBasis: cluster
      # How far a hot node is relieved on the resources it is over on: this share of the way from
      # highThresholds down to lowThresholds (0 = just under high, as Koordinator and upstream do;
      # 1 = down to low). Each move's reason shows the goal: "cpu 82% > high 70% (relieve to ≤ 64%)".
      # On real usage traces (benchmarks/RESULTS.md, quality) 0.25 left 11-63% fewer hot-node-minutes
      # than 0 with 5-56% fewer evictions: a deeper goal picks pods that cover more of it.
      reliefDepth: 0.25
      # How full a move may make its target: "high" (up to its high threshold, as both peers do) or
      # "goal" (no higher than the relief goal above, so a moved pod's usage may grow by the band
      # between that goal and high before its new node is hot). On the quality benchmark "goal" cut
      # ping-pong moves by 29-43% at 300 nodes, but cost 2-18% more evictions, and hot-node-minutes
      # moved by -11% to +9%: a trade, so it is off by default.
      targetCeiling: high

  # Give quota groups (ElasticQuota) back capacity they lent, and trim groups over their max.
  # It needs a quota-aware scheduler, or the lender's replacements take the freed room back: our
  # extender (deploy/overlays/with-scheduler) refuses a pod whose quota would go over max, or would
  # borrow what a group below its min waits for; scheduler-plugins' Capacity Scheduling refuses
  # borrowing beyond the quotas' total min and preempts borrowers itself (QuotaReclaim then finds
  # their victims terminating, counts them as room being freed, and evicts nothing more).
  # Off by default even so: it evicts other teams' pods, and a cluster may hold ElasticQuota
  # objects for a scheduler that does not run. Enable it deliberately (see
  # config/examples/quotareclaim.yaml; deploy/components/elasticquota-crd installs the CRD where
  # scheduler-plugins is not installed). Its arguments and their defaults:
  # - name: QuotaReclaim
  #   args:
  #     pendingGraceSeconds: 60      # a pending pod must wait this long before it triggers reclaim
  #     overMaxDelaySeconds: 120     # a group must be over max this long before it is trimmed
  #     reclaimPolicy: Any           # Any | LowerPriority (only victims of lower priority)
  #     lenderFloor: Strict          # Strict | NetGain | None: may a lender be pushed below its min
  #     hierarchyOrder: TopDown      # TopDown | SiblingsFirst
  #     aggregateMinGate: false
  #     maxEvictionsPerRound: 10
  #     # maxEvictionsPerLender: 3   # default: no limit
  #     lenderCooldownSeconds: 0
  #     backoffSeconds: 300          # doubles per round without progress, up to 8x; resets on progress
  #     dryRun: false
  #     quotaLabel: quota.scheduling.koordinator.sh/name
  #     parentLabel: quota.scheduling.koordinator.sh/parent
  # Limits on its evictions: `limits` above (maxEvictionsPerCycle/PerNode/PerNamespace/PerHour),
  # each victim's PodDisruptionBudget (evictions go through the Eviction API), the migration
  # controller's maxMigratingGlobally/PerNode/PerNamespace, evictQPS/evictBurst, and its own
  # maxEvictionsPerRound, maxEvictionsPerLender and lenderCooldownSeconds. A workload's migration
  # limits (cooldown, objectLimiters.workload, maxMigratingPerWorkload, maxUnavailablePerWorkload)
  # do not apply: they pace load moves, while a reclaim gives room back on purpose. With these
  # defaults a reclaim that needs 6 evictions gets them in one round when the lender's pods are on
  # three nodes or more (maxEvictionsPerNode 2), else 2 per node per round.
  # Pacing: victims still being evicted count as room being freed; no new round for a waiting group
  # until its last round is judged (its victims gone, at most two migration ttls). A round after
  # which the victims are gone but the group still waits and got nothing (the scheduler gave the
  # room to others) is a QuotaReclaimNoProgress Warning Event on the group's ElasticQuota and
  # descheduler_quota_reclaim_no_progress_total, and backs that (group, lender) pair off.
  # A gang (PodGroup / Job) is evicted whole or not at all; a waiting pod deleted mid-reclaim
  # stops it: the next round sees no waiting pod and evicts nothing more (jobs already running
  # finish).

# How planned moves are carried out (PodMigrationJobs) and how many may run at once.
migration:
  defaultMode: ReservationFirst      # ReservationFirst | EvictDirectly
  ttl: 5m                            # a job not finished by then is aborted or failed
  evictionPolicy: Eviction           # Eviction (respects PodDisruptionBudgets) | Delete
  jobRetention: 1h                   # finished jobs are deleted after this
  # maxMigratingGlobally: 10         # default: no limit
  maxMigratingPerNode: 2
  # maxMigratingPerNamespace: 5      # default: no limit
  # Per workload: a count or a percent of replicas ("10%"). Default: 1 for <= 3 replicas,
  # 2 for 4-10, 10% (rounded up) above 10.
  # maxMigratingPerWorkload: 1
  # maxUnavailablePerWorkload: "10%"
  objectLimiters:
    workload: {duration: 5m, maxMigrating: 1}   # at most 1 move per workload per 5 minutes
  evictQPS: 10
  evictBurst: 1
  cooldown: 10m                      # no second move of a workload, no source node as target, within this
  # A move holds room on its target (a Reservation) only when a reservation-aware scheduler (the
  # extender, deploy/overlays/with-scheduler) serves the pod's schedulerName: it renews the Lease
  # descheduler-system/descheduler-scheduler (`descheduler run --scheduler-lease`) and lists the
  # schedulerNames it serves there. Every other move evicts without a Reservation, and is judged
  # by where the replacement lands (descheduler_moves_without_reservation_total counts them).
  reservationScheduler:
    expect: Preferred                # Required: never evict without a Reservation; the job waits
                                     # Preferred: wait `grace`, then move without one; Absent: never reserve
    grace: 30s                       # after the controller starts, or after the Lease goes stale
  steerOffSource: true               # while a node has moves without a Reservation in flight, it carries
                                     # the taint descheduler.dev/moving-off:PreferNoSchedule
"""
