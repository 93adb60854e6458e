"""docs/grafana-dashboard.json and docs/prometheus-alerts.yml ask only for series that
/metrics has, and docs/operations.md ("Metrics") lists every series /metrics has."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.support import ROOT
from tests.monitoring.conftest import POD_HOST

pytestmark = pytest.mark.django_db

DOCS = ROOT / "docs"
NAME = re.compile(r"\bpricefeed_[a-z0-9_]+")
# What Prometheus adds to a family's name in its samples.
SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created")


@pytest.fixture
def families(settings) -> set[str]:
    """The metric families of one scrape (every one is there, with or without samples)."""
    settings.DEBUG = True
    settings.PRICEFEED_METRICS_TOKEN = ""
    response = Client().get("/metrics", HTTP_HOST=POD_HOST)
    assert response.status_code == 200
    names = {f.name for f in text_string_to_metric_families(response.content.decode())}
    # prometheus_client's "<counter or histogram>_created" series come as families of
    # their own: the time each began, not series of their own to chart.
    return {name for name in names if name.removesuffix("_created") not in names - {name}}


def family_of(name: str, families: set[str]) -> str | None:
    if name in families:
        return name
    for suffix in SUFFIXES:
        if name.endswith(suffix) and name.removesuffix(suffix) in families:
            return name.removesuffix(suffix)
    return None


def dashboard_expressions() -> list[str]:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def test_the_dashboard_is_a_grafana_dashboard_of_unique_panels():
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())

    assert dashboard["title"] and dashboard["uid"] and dashboard["schemaVersion"] >= 36
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"], panel["title"]
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]


def test_every_series_the_dashboard_uses_is_in_a_scrape(families):
    used = {name for expr in dashboard_expressions() for name in NAME.findall(expr)}

    assert used
    missing = sorted(name for name in used if family_of(name, families) is None)
    assert not missing, missing


def test_the_dashboard_shows_every_series_of_a_scrape(families):
    shown = {
        family_of(name, families) for expr in dashboard_expressions() for name in NAME.findall(expr)
    }

    assert not families - shown, sorted(families - shown)


def test_every_series_the_alert_rules_use_is_in_a_scrape(families):
    rules = (DOCS / "prometheus-alerts.yml").read_text()
    expressions = re.findall(r"(?ms)^\s+expr: (?:>\n)?(.*?)(?=^\s+(?:for|labels):)", rules)
    used = {name for expr in expressions for name in NAME.findall(expr)}

    assert len(expressions) == rules.count("- alert:")
    missing = sorted(name for name in used if family_of(name, families) is None)
    assert not missing, missing


def test_operations_lists_every_series_of_a_scrape(families):
    text = (DOCS / "operations.md").read_text()
    section = text[text.index("## Metrics") :]
    listed = {family_of(name, families) or name for name in NAME.findall(section)}

    assert not families - listed, sorted(families - listed)
