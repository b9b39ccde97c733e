"""Load-aware Kubernetes descheduler and rebalancer."""

__version__ = "0.1.0"
