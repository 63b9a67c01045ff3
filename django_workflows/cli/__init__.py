"""`manage.py workflows ...`, the operator's command line over the client: its arguments
(arguments.py), its reads (reads.py: list, show), its operations on instances (actions.py:
cancel, terminate, retry, delete, resume), their JSON documents (documents.py) and the aligned
columns of their human output (columns.py). The command file only hands over to these."""
