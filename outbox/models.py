"""Models arrive with the outbox issue (#4)."""
