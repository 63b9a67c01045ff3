"""The peers of benchmarks/durable_peers.py: each system's workflow or task, and its settings."""
