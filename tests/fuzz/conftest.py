"""The CI profile of the property tests: the same examples on every run (derandomize),
few enough to add seconds, not minutes; no example database written into the checkout.
`pytest --hypothesis-profile=<name>` chooses another registered profile; fuzz/run.py
runs the same properties randomised for a time box."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "pricefeed-ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    database=None,
    print_blob=True,
    # Generated archives and workbooks are slow to build, not slow to read.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def pytest_configure(config):
    if config.getoption("hypothesis_profile", None) is None:
        settings.load_profile("pricefeed-ci")
