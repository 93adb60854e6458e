"""Price imports: one file of one message for one config, from PENDING to its outcome.

lifecycle (the state machine and the run) · source (the file's bytes) · storage (rows
into the items table) · diff (changes against the previous import) · outcome (the
outbox event) · preview (a file read as an import would, storing nothing).
"""
