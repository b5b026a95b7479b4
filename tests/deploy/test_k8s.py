"""The Kubernetes manifests (deploy/k8s): rendered as the kustomization says, valid against the
Kubernetes API's schemas (npm's kubernetes-models, offline), consistent with each other and with
the image, and the Deployment's pod run for real from the built image by podman kube play."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import IMAGE, PREFIX, ROOT, Made, free_port, http_get, podman, run, torquectl

K8S = ROOT / "deploy/k8s"
LABELS = {"app.kubernetes.io/name": "torqued", "app.kubernetes.io/component": "server"}


def rendered() -> list[dict]:
    """The kustomization's resources, in order (it has no transformers to apply)."""
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert set(kustomization) == {"apiVersion", "kind", "resources"}
    documents = []
    for resource in kustomization["resources"]:
        documents += [d for d in yaml.safe_load_all((K8S / resource).read_text()) if d]
    return documents


def by_kind(kind: str, name: str = "") -> dict:
    """The one rendered object of `kind` (named `name`, where several are)."""
    found = [d for d in rendered() if d["kind"] == kind and name in ("", d["metadata"]["name"])]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def container() -> dict:
    return by_kind("Deployment")["spec"]["template"]["spec"]["containers"][0]


def env_of(spec: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in spec["env"]}


def test_rendered_manifests_pass_the_kubernetes_schemas(tmp_path: Path) -> None:
    npm_dir = Path(os.environ.get("TORQUED_NPM_DIR", ""))
    if not (npm_dir / "node_modules/kubernetes-models").is_dir():
        pytest.fail("TORQUED_NPM_DIR must hold kubernetes-models (tests/deploy/run.sh installs it)")
    manifests = tmp_path / "rendered.yaml"
    manifests.write_text(yaml.safe_dump_all(rendered()))
    # Node finds packages beside the script it runs: run a copy of it in the npm directory.
    script = npm_dir / "k8s_schema.mjs"
    shutil.copyfile(ROOT / "tests/deploy/k8s_schema.mjs", script)
    result = run("node", str(script), str(manifests), check=False)
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    kinds = sorted(line.split()[2] for line in result.stdout.splitlines())
    assert kinds == sorted(
        [
            "ConfigMap",
            "Deployment",
            "Service",
            "Service",
            "HorizontalPodAutoscaler",
            "PodDisruptionBudget",
        ]
    )
    # The validator does reject a broken manifest.
    broken = by_kind("Deployment")
    broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "grpc"
    manifests.write_text(yaml.safe_dump(broken))
    assert run("node", str(script), str(manifests), check=False).returncode == 1


def test_models_config_map_is_the_model_repository() -> None:
    generated = run(sys.executable, str(K8S / "models-configmap.py")).stdout
    assert generated == (K8S / "models-configmap.yaml").read_text(), (
        "deploy/models changed: python3 deploy/k8s/models-configmap.py > "
        "deploy/k8s/models-configmap.yaml"
    )
    data = by_kind("ConfigMap", "torqued-models")["data"]
    assert data == {p.name: p.read_text() for p in (ROOT / "deploy/models").iterdir()}


def test_labels_selectors_and_ports_agree_with_each_other_and_with_the_image() -> None:
    deployment = by_kind("Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"]["matchLabels"] == LABELS == spec["template"]["metadata"]["labels"]
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    image = json.loads(podman("image", "inspect", "--format", "{{json .Config}}", IMAGE).stdout)
    assert {f"{p}/tcp" for p in ports.values()} == set(image["ExposedPorts"])
    env = env_of(container())
    assert (
        int(env["TORQUED_PORT"]) == ports["grpc"]
        and int(env["TORQUED_METRICS_PORT"]) == ports["metrics"]
    )

    grpc_service = by_kind("Service", "torqued")
    assert grpc_service["spec"]["clusterIP"] == "None"
    metrics_service = by_kind("Service", "torqued-metrics")
    for service, port_name in ((grpc_service, "grpc"), (metrics_service, "metrics")):
        assert service["spec"]["selector"] == LABELS
        [port] = service["spec"]["ports"]
        assert port["targetPort"] == port_name and port["port"] == ports[port_name]
    annotations = metrics_service["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == ports["metrics"]

    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container()[probe]["grpc"]["port"] == ports["grpc"], probe
    hpa = by_kind("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert hpa["spec"]["minReplicas"] == spec["replicas"]
    assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]
    assert by_kind("PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == LABELS

    # Non-root as the image's user, read-only root, the data directory on a volume, resources.
    user, group = (int(x) for x in image["User"].split(":"))
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (
        user,
        group,
    )
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container()["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["name"]: m["mountPath"] for m in container()["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["data"] == env["TORQUED_DATA_DIR"] and [*image["Volumes"]] == [mounts["data"]]
    assert mounts["models"] == env["TORQUED_MODEL_REPOSITORY"]
    assert volumes["models"]["configMap"]["name"] == by_kind("ConfigMap")["metadata"]["name"]
    assert set(container()["resources"]) == {"requests", "limits"}
    # The kubelet's SIGKILL comes after the preStop hook, the drain and torqued's own grace.
    pre_stop = container()["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    assert (
        pod["terminationGracePeriodSeconds"]
        > int(pre_stop[1]) + float(env["TORQUED_DRAIN_SECONDS"]) + 10
    )


def test_the_memory_budget_is_within_the_memory_limit() -> None:
    """The server holds its resident memory within --memory-budget-bytes (docs/security.md); the
    container's limit must leave room above it."""
    spec = container()
    limit = spec["resources"]["limits"]["memory"]
    units = {"Mi": 1 << 20, "Gi": 1 << 30}
    limit_bytes = int(limit[:-2]) * units[limit[-2:]]
    budget = int(env_of(spec)["TORQUED_MEMORY_BUDGET_BYTES"])
    assert budget <= limit_bytes // 2


def test_podman_kube_play_runs_the_deployments_pod(made: Made, tmp_path: Path) -> None:
    """The Deployment and its ConfigMap as they are, but for three things podman needs on one
    machine: this run's names (podman keeps the ConfigMap as a volume of its name), one replica
    (podman runs each replica's pod on the host's ports), and host ports on loopback (podman
    publishes every containerPort, on its own number when there is no hostPort). podman runs the
    pod from the image built here; it answers calls from inside (torquectl in the image) and
    from the host."""
    config_map, deployment = by_kind("ConfigMap"), by_kind("Deployment")
    config_map["metadata"]["name"] = made.volume("models")
    deployment["metadata"]["name"] = f"{PREFIX}-kube"
    deployment["spec"]["replicas"] = 1
    pod = deployment["spec"]["template"]["spec"]
    [models] = [v for v in pod["volumes"] if "configMap" in v]
    models["configMap"]["name"] = config_map["metadata"]["name"]
    host_ports = {}
    for port in pod["containers"][0]["ports"]:
        port["hostIP"], port["hostPort"] = "127.0.0.1", free_port()
        host_ports[port["name"]] = port["hostPort"]
    manifest = tmp_path / "kube.yaml"
    manifest.write_text(yaml.safe_dump_all([config_map, deployment]))
    # kube play's own network goes too, unless something else uses it.
    made.cleanups.append(["podman", "network", "rm", "podman-default-kube-network"])
    made.cleanups.append(["podman", "kube", "down", str(manifest)])
    podman("kube", "play", str(manifest))
    pods = podman(
        "pod", "ps", "--format", "{{.Name}}", "--filter", f"name={PREFIX}-kube"
    ).stdout.split()
    assert len(pods) == 1
    containers = podman("ps", "--format", "{{.Names}}", "--filter", f"pod={pods[0]}").stdout.split()
    [server] = [c for c in containers if c.endswith("torqued")] or [None]
    assert server, containers

    def exec_torquectl(*args: str) -> subprocess.CompletedProcess:
        return podman("exec", server, "torquectl", *args, "--deadline", "5", check=False)

    end = time.monotonic() + 60
    while exec_torquectl("health").stdout.strip() != "SERVING":
        assert time.monotonic() < end, podman("logs", server, check=False).stderr
        time.sleep(0.5)
    models = {m["name"] for m in json.loads(exec_torquectl("models").stdout)["models"]}
    assert {p.name.split(".")[0] for p in (ROOT / "deploy/models").iterdir()} == models
    assert torquectl(f"127.0.0.1:{host_ports['grpc']}", "health").stdout.strip() == "SERVING"
    assert "torqued_models_registered" in http_get(
        f"http://127.0.0.1:{host_ports['metrics']}/metrics"
    )
    assert podman("exec", server, "id", "-u").stdout.strip() == "10001"
    assert podman("exec", server, "touch", "/usr/local/bin/x", check=False).returncode != 0
    assert podman("exec", server, "touch", "/var/lib/torqued/x", check=False).returncode == 0
