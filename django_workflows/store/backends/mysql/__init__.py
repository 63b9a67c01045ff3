"""The MySQL and MariaDB backend (`backend.py`) and its parts: batched statements, the writes as
stored procedures, statements prepared once per connection, exact key collations and bulk
deletes."""
