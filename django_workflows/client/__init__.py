"""The client: what application code calls to start, address, read and operate instances on
its own connection. The package's root re-exports every public name."""
