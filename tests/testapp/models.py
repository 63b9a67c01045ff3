"""Models the tests' workflows write to (a `Ledger`, for example); no migrations needed."""
