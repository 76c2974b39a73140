"""The Helm chart (deploy/helm/tambo): linted and rendered by Helm's own Go SDK (helm-python-sdk binds it
through ctypes; no `helm` binary), every rendered manifest validated against the Kubernetes API schemas
shipped in kubernetes-validate (the ServiceMonitor against prometheus-operator's CRD models), and the
Deployment and the migrations Job run what docker-compose.yml runs. Nothing is downloaded at test time."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import require_part

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "tambo"
# The oldest Kubernetes the chart supports (Chart.yaml's kubeVersion) and the newest schemas shipped.
KUBE_VERSIONS = ["1.25.0", "1.37.0"]

try:
    import helm_python as helm
except ImportError:  # pragma: no cover - the test extra installs it
    helm = None

REQUIRED = {"existingSecret": "tambo"}
ALL_OPTIONS = {
    "existingSecret": "tambo",
    "directDatabaseUrlKey": "DATABASE_DIRECT_URL",
    "config": {"allowedHosts": "tambo.example.com", "dbPoolSize": 0},
    "autoscaling": {"enabled": True, "openStreams": {"enabled": True}},
    "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
    "ingress": {"enabled": True, "tlsSecretName": "tambo-tls"},
    "extraEnv": [{"name": "RUN_LEASE_SECONDS", "value": "30"}],
    "retention": {"cronJob": {"enabled": True}},
}


@pytest.fixture(scope="module")
def chart():
    require_part(helm is not None, "pip install -e '.[test]' (helm-python-sdk)")
    with helm.Chart.load(str(CHART)) as loaded:
        yield loaded


def render(chart, values: dict[str, Any]) -> list[dict[str, Any]]:
    files = chart.render(copy.deepcopy(values), name="prod", namespace="tambo", is_install=True)
    documents = []
    for name, text in files.items():
        if name.endswith(".yaml"):
            documents += [doc for doc in yaml.safe_load_all(text) if doc]
    return documents


def by_kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents if doc["kind"] == kind]


def test_the_chart_lints_clean_with_defaults_and_with_every_option():
    require_part(helm is not None, "pip install -e '.[test]' (helm-python-sdk)")
    for values in (REQUIRED, ALL_OPTIONS):
        report = helm.lint(str(CHART), copy.deepcopy(values), strict=True)
        assert report["errors"] == [] and report["messages"] == [], report


def test_it_refuses_to_render_without_an_existing_secret(chart):
    with pytest.raises(helm.HelmError, match="existingSecret"):
        render(chart, {})


def schema_errors(document: dict[str, Any], kube_version: str = KUBE_VERSIONS[0]) -> str | None:
    """None when the manifest is valid for `kube_version`, unknown fields refused (strict)."""
    if document["apiVersion"].startswith("monitoring.coreos.com/"):
        return servicemonitor_errors(document)
    import kubernetes_validate

    try:
        kubernetes_validate.validate(document, kube_version, strict=True)
    except kubernetes_validate.ValidationError as error:
        return f"{document['kind']}: {error.message} at {list(error.path)}"
    return None


def servicemonitor_errors(document: dict[str, Any]) -> str | None:
    """Against prometheus-operator's CRD as cloudcoil's pydantic models carry it, with unknown fields
    refused (the models themselves ignore them, which would let a misspelt field pass)."""
    import jsonschema
    from cloudcoil.models.prometheus_operator import v1

    schema = v1.ServiceMonitor.model_json_schema(by_alias=True)

    def closed(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                closed(value)
        elif isinstance(node, list):
            for value in node:
                closed(value)

    closed(schema)
    errors = [f"{list(e.path)}: {e.message}" for e in jsonschema.Draft202012Validator(schema).iter_errors(document)]
    if not errors:
        v1.ServiceMonitor.model_validate(document)
    return "; ".join(errors) or None


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("values", [REQUIRED, ALL_OPTIONS], ids=["defaults", "every-option"])
def test_every_rendered_manifest_is_valid_against_the_kubernetes_api_schemas(chart, values, kube_version):
    documents = render(chart, values)
    kinds = sorted(doc["kind"] for doc in documents)
    expected = ["Deployment", "Job", "PodDisruptionBudget", "Service"]
    if values is ALL_OPTIONS:
        expected += ["CronJob", "HorizontalPodAutoscaler", "Ingress", "ServiceMonitor"]
    assert kinds == sorted(expected)
    assert [error for doc in documents if (error := schema_errors(doc, kube_version))] == []


def test_the_schema_check_refuses_a_misspelt_field(chart):
    """The validation above can fail: a field Kubernetes does not know, in any manifest, is refused."""
    for document in render(chart, ALL_OPTIONS):
        broken = copy.deepcopy(document)
        broken["spec"]["replicaz"] = 2
        assert schema_errors(broken), document["kind"]


def compose_app() -> tuple[dict[str, Any], dict[str, Any]]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return compose["services"]["app"], compose["services"]["migrate"]


def env_names(container: dict[str, Any]) -> set[str]:
    return {item["name"] for item in container["env"]}


@pytest.mark.parametrize("values", [REQUIRED, ALL_OPTIONS], ids=["defaults", "every-option"])
def test_the_deployment_and_job_run_the_compose_files_commands_and_environment(chart, values):
    app, migrate = compose_app()
    documents = render(chart, values)
    [deployment] = by_kind(documents, "Deployment")
    [job] = by_kind(documents, "Job")
    [server] = deployment["spec"]["template"]["spec"]["containers"]
    [migrator] = job["spec"]["template"]["spec"]["containers"]
    # The image's ENTRYPOINT is tambo-server in both: the compose `command` is the container's args.
    assert server["args"] == app["command"] and "command" not in server
    assert migrator["args"] == migrate["command"] and "command" not in migrator
    assert set(app["environment"]) <= env_names(server)
    assert set(migrate["environment"]) <= env_names(migrator)
    secret_refs = {item["name"] for item in server["env"] if "valueFrom" in item}
    assert {"SECRET_KEY", "DATABASE_URL", "OPENAI_API_KEY", "METRICS_TOKEN"} <= secret_refs


def test_migrations_run_as_a_hook_before_the_deployment_rolls(chart):
    [job] = by_kind(render(chart, REQUIRED), "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_secrets_come_only_from_the_named_secret(chart):
    documents = render(chart, ALL_OPTIONS)
    assert by_kind(documents, "Secret") == []
    for kind in ("Deployment", "Job"):
        [workload] = by_kind(documents, kind)
        [container] = workload["spec"]["template"]["spec"]["containers"]
        refs = {item["name"]: item["valueFrom"]["secretKeyRef"] for item in container["env"] if "valueFrom" in item}
        assert {ref["name"] for ref in refs.values()} == {"tambo"}
        for name in ("SECRET_KEY", "DATABASE_URL", "OPENAI_API_KEY", "METRICS_TOKEN", "SECRETS_KEYS"):
            assert name in refs and not any(i.get("value") for i in container["env"] if i["name"] == name)
    # Behind PgBouncer, LISTEN (the server) and the migrations (the Job) go straight to PostgreSQL.
    [deployment], [job] = by_kind(documents, "Deployment"), by_kind(documents, "Job")
    server_env = {i["name"]: i for i in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    job_env = {i["name"]: i for i in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert server_env["DATABASE_LISTEN_URL"]["valueFrom"]["secretKeyRef"]["key"] == "DATABASE_DIRECT_URL"
    assert server_env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == "DATABASE_URL"
    assert job_env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == "DATABASE_DIRECT_URL"


def test_the_grace_period_covers_the_servers_graceful_shutdown(chart):
    [deployment] = by_kind(render(chart, {**REQUIRED, "gracefulShutdownSeconds": 45}), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    env = {item["name"]: item.get("value") for item in pod["containers"][0]["env"]}
    assert env["GRACEFUL_SHUTDOWN_SECONDS"] == "45"
    sleep = int(pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"][1])
    assert pod["terminationGracePeriodSeconds"] > sleep + 45


def test_probes_ask_healthz_with_a_host_the_server_allows(chart):
    [deployment] = by_kind(render(chart, ALL_OPTIONS), "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert (get["path"], get["port"]) == ("/healthz", "http")
        assert get["httpHeaders"] == [{"name": "Host", "value": "tambo.example.com"}]


def test_the_options_scale_on_open_streams_and_stream_through_the_ingress(chart):
    documents = render(chart, ALL_OPTIONS)
    [hpa] = by_kind(documents, "HorizontalPodAutoscaler")
    metrics = {m["type"]: m for m in hpa["spec"]["metrics"]}
    assert metrics["Resource"]["resource"]["name"] == "cpu"
    assert metrics["Pods"]["pods"]["metric"]["name"] == "tambo_open_streams"
    [deployment] = by_kind(documents, "Deployment")
    assert "replicas" not in deployment["spec"]  # the HPA owns it
    [ingress] = by_kind(documents, "Ingress")
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    [monitor] = by_kind(documents, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    [service] = by_kind(documents, "Service")
    assert {p["name"] for p in service["spec"]["ports"]} == {"http", "metrics"}


@pytest.mark.parametrize("values", [
    {"config": {"workers": "two"}},
    {"config": {"workerz": 2}},  # a misspelt setting
    {"gracefulShutdownSeconds": 0},
    {"config": {"logFormat": "xml"}},
], ids=["a-string-for-a-number", "an-unknown-setting", "no-grace", "a-format-the-server-refuses"])
def test_values_the_server_would_refuse_are_refused_when_rendering(chart, values):
    merged = {**REQUIRED, **values}
    with pytest.raises(helm.HelmError, match="values don't meet the specifications|schema"):
        render(chart, merged)


def test_the_retention_pass_runs_in_every_pod_or_in_a_cronjob_alone(chart):
    def interval(documents):
        [deployment] = by_kind(documents, "Deployment")
        env = {i["name"]: i.get("value") for i in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        return env["RETENTION_INTERVAL_SECONDS"]

    assert interval(render(chart, REQUIRED)) == "3600"
    documents = render(chart, ALL_OPTIONS)
    assert interval(documents) == "0"
    [cronjob] = by_kind(documents, "CronJob")
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    [container] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["apply_retention"]
    assert {"SECRET_KEY", "DATABASE_URL"} <= env_names(container)
