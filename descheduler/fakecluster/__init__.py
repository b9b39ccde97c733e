"""Simulated cluster: a fake API server and the components a real cluster would run."""
