"""The PostgreSQL backend (`backend.py`) and its parts: the claim's statements, the writes as
database functions, the claims that ride on a final write, statements prepared once per
connection, and the direct libpq call path."""
