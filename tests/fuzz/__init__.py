"""Property tests of the readers of untrusted input (MIME, archives, text tables,
numbers); fuzz/run.py runs the same properties randomised for a time box."""
