"""Scenario layer: a scenario validated into its resolved config, and the memory it needs."""
