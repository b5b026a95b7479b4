"""The compose stack (deploy/compose.yaml): torqued and Prometheus up with podman-compose,
Prometheus finding torqued by its service name, and, after real traffic, every query of every
panel of the Grafana dashboard (deploy/grafana/dashboards/torqued.json) answered with data by
that Prometheus. Then the stack goes down with its volumes."""

from __future__ import annotations

import json
import math
import os
import time
from typing import Iterator

import pytest
import yaml

from conftest import (
    PREFIX,
    ROOT,
    binary,
    free_port,
    http_get,
    podman,
    prometheus_query,
    run,
    torquectl,
    wait_serving,
)

DASHBOARD = ROOT / "deploy/grafana/dashboards/torqued.json"
# Gauges may read 0 with nothing in flight at the moment of the query; counters and histograms
# must show the traffic.
MAY_BE_ZERO = ("torqued_executor_queue_depth", "torqued_executor_busy_workers")


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target, with Grafana's $__rate_interval as 1m (four of the
    stack's 5 s scrapes and more)."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"].replace("$__rate_interval", "1m"))
        for panel in dashboard["panels"]
        for target in panel["targets"]
    ]


class Stack:
    def __init__(self) -> None:
        self.ports = {name: free_port() for name in ("grpc", "metrics", "prometheus")}
        self.project = f"{PREFIX}-compose"
        self.env = os.environ | {
            "TORQUED_PUBLISH_GRPC": str(self.ports["grpc"]),
            "TORQUED_PUBLISH_METRICS": str(self.ports["metrics"]),
            "TORQUED_PUBLISH_PROMETHEUS": str(self.ports["prometheus"]),
            "BASE_IMAGE": "localbase:bookworm",
        }

    def compose(self, *args: str, check: bool = True):
        return run(
            "podman-compose",
            "--project-name",
            self.project,
            "--file",
            str(ROOT / "deploy/compose.yaml"),
            *args,
            check=check,
            env=self.env,
            cwd=ROOT,
        )


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    stack = Stack()
    try:
        stack.compose("up", "--detach")
        yield stack
    finally:
        stack.compose("down", "--volumes", "--timeout", "60", check=False)
        # What podman-compose's down leaves (its network, with some versions).
        label = f"label=io.podman.compose.project={stack.project}"
        for kind in ("volume", "network"):
            for name in podman(
                kind, "ls", "--quiet", "--filter", label, check=False
            ).stdout.split():
                podman(kind, "rm", "--force", name, check=False)


def wait_for(what: str, check, timeout: float):
    end = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
        except OSError:
            pass
        if time.monotonic() > end:
            pytest.fail(f"{what}: not after {timeout} s")
        time.sleep(1)


def test_prometheus_scrapes_torqued_by_service_name_and_every_panel_has_data(stack: Stack) -> None:
    server = f"127.0.0.1:{stack.ports['grpc']}"
    assert wait_serving(server, timeout=90) is not None, stack.compose("logs", check=False).stdout
    prometheus = stack.ports["prometheus"]
    wait_for(
        "Prometheus ready",
        lambda: "Ready" in http_get(f"http://127.0.0.1:{prometheus}/-/ready"),
        90,
    )

    # Traffic: batches through the executor, small calls inline, a registration, an error code.
    torquectl(server, "register", str(ROOT / "deploy/models/quadruped.urdf"), "--name", "walker")
    assert (
        torquectl(server, "gravity", "no-such-model", stdin='{"q": [[0]]}', check=False).returncode
        == 1
    )
    load = [
        binary("TORQUED_LOAD_BINARY"),
        "--target",
        server,
        "--model",
        "quadruped",
        "--warmup",
        "0",
        "--duration",
        "8",
        "--concurrency",
        "2",
    ]
    run(*load, "--rpc", "ForwardDynamics", "--batch", "100")
    run(*load, "--rpc", "InverseDynamics", "--batch", "1")

    targets = json.loads(http_get(f"http://127.0.0.1:{prometheus}/api/v1/targets"))
    active = targets["data"]["activeTargets"]
    assert [t["discoveredLabels"].get("__meta_dns_name") for t in active] == ["torqued"]

    def every_query_answers() -> bool:
        missing.clear()
        for title, expr in dashboard_queries():
            values = [float(sample["value"][1]) for sample in prometheus_query(prometheus, expr)]
            finite = [v for v in values if math.isfinite(v)]
            needs_positive = not any(gauge in expr for gauge in MAY_BE_ZERO)
            if not finite or (needs_positive and max(finite) <= 0):
                missing.append(f"{title}: {expr} -> {values}")
        return not missing

    missing: list[str] = []
    end = time.monotonic() + 60
    while not every_query_answers() and time.monotonic() < end:
        time.sleep(2)
    assert not missing, "panels without data:\n" + "\n".join(missing)
    for title, expr in dashboard_queries():
        print(f"{title}: {len(prometheus_query(prometheus, expr))} series")


def test_grafana_overlay_agrees_with_the_stack() -> None:
    """The Grafana overlay (not run here: Grafana is no Debian package, podman-compose 1.0.3 has
    no `config`) agrees with the stack whose Prometheus the dashboard's queries were tested
    against: its datasource is that Prometheus by service name and port, every panel names the
    datasource's uid, and the dashboard provider reads the directory the dashboard is mounted
    in."""
    stack = yaml.safe_load((ROOT / "deploy/compose.yaml").read_text())["services"]
    grafana = yaml.safe_load((ROOT / "deploy/compose.grafana.yaml").read_text())["services"]
    assert set(grafana) == {"grafana"} and grafana["grafana"]["depends_on"] == ["prometheus"]
    provisioning = ROOT / "deploy/grafana/provisioning"
    [source] = yaml.safe_load((provisioning / "datasources/prometheus.yaml").read_text())[
        "datasources"
    ]
    prometheus_port = stack["prometheus"]["ports"][0].split(":")[-1]
    assert source["url"] == f"http://prometheus:{prometheus_port}"
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        uids = {panel["datasource"]["uid"]} | {t["datasource"]["uid"] for t in panel["targets"]}
        assert uids == {source["uid"]}, panel["title"]
    [provider] = yaml.safe_load((provisioning / "dashboards/torqued.yaml").read_text())["providers"]
    mounts = {v.split(":")[0]: v.split(":")[1] for v in grafana["grafana"]["volumes"]}
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
