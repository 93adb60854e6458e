"""Shared machinery every app builds on; imports no app.

claims (claim, finish, retry, requeue, sweep of claimed rows) · retry (backoff values) ·
dbtime (time from the database) · storedtext and texts (stored reasons, said in the
reader's language) · pgnotify
(LISTEN/NOTIFY) · sweeps (periodic sweeps apps register) · alerts · crypto (secrets at
rest) · faults (crash points for tests) · logs (log
formats) · workers (who is working) · sql (NOTIFY, LISTEN) · adminutils (admin helpers) ·
exceptions.
"""
