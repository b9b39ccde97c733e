"""`descheduler simulate`: the real controller against a simulated cluster, and the report of the run."""
