"""Models arrive with the notifications issue (#4)."""
