"""The Kubernetes manifests, checked without a cluster.

kubernetes-validate (run by tests/e2e/kubernetes.sh) checks the core kinds against the schemas
of a current Kubernetes release; this checks what it cannot:

- ServiceMonitor and PrometheusRule against the fields of the prometheus-operator CRDs
  (monitoring.coreos.com/v1) that the manifests use, with the CRDs' types, required fields and
  duration pattern, refusing any field the CRDs do not have;
- the StatefulSet's operating rules: probes on /-/healthy and /-/ready, non-root, a read-only
  root filesystem, no privilege escalation, requests and limits, the token as a mounted Secret
  file, never an environment variable, and the state store on a volume claim of each replica's
  own, so that a replaced pod starts warm, with a rolling update one pod at a time.

Usage: kubernetes_check.py deploy/kubernetes
"""

import pathlib
import sys

import jsonschema
import yaml

# The operator's Duration: "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?
# (([0-9]+)s)?(([0-9]+)ms)?)$".
DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}, "labels": STRING_MAP},
    "additionalProperties": False,
}
RELABEL = {
    "type": "object",
    "properties": {
        "sourceLabels": {"type": "array", "items": {"type": "string"}},
        "separator": {"type": "string"},
        "targetLabel": {"type": "string"},
        "regex": {"type": "string"},
        "modulus": {"type": "integer"},
        "replacement": {"type": "string"},
        "action": {
            "enum": ["replace", "Replace", "keep", "Keep", "drop", "Drop", "hashmod", "HashMod",
                     "labelmap", "LabelMap", "labeldrop", "LabelDrop", "labelkeep", "LabelKeep",
                     "lowercase", "Lowercase", "uppercase", "Uppercase", "keepequal", "KeepEqual",
                     "dropequal", "DropEqual"]
        },
    },
    "additionalProperties": False,
}
ENDPOINT = {
    "type": "object",
    "properties": {
        "port": {"type": "string"},
        "path": {"type": "string"},
        "scheme": {"enum": ["http", "https"]},
        "params": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        "interval": DURATION,
        "scrapeTimeout": DURATION,
        "honorLabels": {"type": "boolean"},
        "relabelings": {"type": "array", "items": RELABEL},
        "metricRelabelings": {"type": "array", "items": RELABEL},
    },
    "additionalProperties": False,
}
SERVICE_MONITOR = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": METADATA,
        "spec": {
            "type": "object",
            "required": ["selector"],
            "properties": {
                "jobLabel": {"type": "string"},
                "selector": {
                    "type": "object",
                    "properties": {"matchLabels": STRING_MAP},
                    "additionalProperties": False,
                },
                "namespaceSelector": {"type": "object"},
                "endpoints": {"type": "array", "minItems": 1, "items": ENDPOINT},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}
RULE = {
    "type": "object",
    "required": ["expr"],
    "properties": {
        "record": {"type": "string"},
        "alert": {"type": "string"},
        "expr": {"type": ["string", "integer"]},
        "for": DURATION,
        "keep_firing_for": {**DURATION, "minLength": 1},
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
    },
    "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
    "additionalProperties": False,
}
PROMETHEUS_RULE = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": METADATA,
        "spec": {
            "type": "object",
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "interval": DURATION,
                            "rules": {"type": "array", "items": RULE},
                        },
                        "additionalProperties": False,
                    },
                }
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}
SCHEMAS = {"ServiceMonitor": SERVICE_MONITOR, "PrometheusRule": PROMETHEUS_RULE}

problems = []


def check_statefulset(path, document):
    pod = document["spec"]["template"]["spec"]
    if document["spec"].get("updateStrategy", {}).get("type", "RollingUpdate") != "RollingUpdate":
        problems.append(f"{path}: updates are not rolling, one pod at a time")
    security = pod.get("securityContext", {})
    if not security.get("runAsNonRoot"):
        problems.append(f"{path}: the pod does not run as non-root")
    secrets = {v["name"] for v in pod.get("volumes", []) if "secret" in v}
    for container in pod["containers"]:
        name = container["name"]
        probes = {
            "livenessProbe": "/-/healthy",
            "readinessProbe": "/-/ready",
        }
        for probe, want in probes.items():
            got = container.get(probe, {}).get("httpGet", {}).get("path")
            if got != want:
                problems.append(f"{path}: {name}'s {probe} asks {got}, not {want}")
        context = container.get("securityContext", {})
        if not context.get("readOnlyRootFilesystem"):
            problems.append(f"{path}: {name}'s root filesystem is writable")
        if context.get("allowPrivilegeEscalation", True):
            problems.append(f"{path}: {name} may escalate privileges")
        resources = container.get("resources", {})
        for need in ("requests", "limits"):
            if "memory" not in resources.get(need, {}):
                problems.append(f"{path}: {name} has no memory {need}")
        for variable in container.get("env", []):
            if "valueFrom" in variable and "secretKeyRef" in variable["valueFrom"]:
                problems.append(f"{path}: {name} takes {variable['name']} from a Secret as an environment variable")
            if variable["name"].endswith("__TOKEN"):
                problems.append(f"{path}: {name} sets the token itself in the environment")
        mounted = {m["name"] for m in container.get("volumeMounts", [])}
        # The state store: a writable volume of the replica's own where STATE__PATH points (the
        # root filesystem is read-only).
        state = [v["value"] for v in container.get("env", []) if v["name"] == "REPUTATION_EXPORTER_STATE__PATH"]
        writable = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", []) if not m.get("readOnly")}
        own = {t["metadata"]["name"] for t in document["spec"].get("volumeClaimTemplates", [])}
        if not state or writable.get(state[0]) not in own:
            problems.append(f"{path}: {name}'s REPUTATION_EXPORTER_STATE__PATH is not a volume claim of its own (a replaced pod would start cold)")
        token_files = [v for v in container.get("env", []) if v["name"].endswith("__TOKEN_FILE")]
        if not token_files or not secrets & mounted:
            problems.append(f"{path}: {name} does not read the token from a mounted Secret file")


def main():
    directory = pathlib.Path(sys.argv[1])
    kinds = {}
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if not document:
                continue
            kind = document.get("kind")
            kinds[kind] = kinds.get(kind, 0) + 1
            if kind in SCHEMAS:
                validator = jsonschema.Draft7Validator(SCHEMAS[kind])
                for error in validator.iter_errors(document):
                    where = "/".join(str(p) for p in error.absolute_path)
                    problems.append(f"{path}: {where}: {error.message}")
            if kind == "StatefulSet":
                check_statefulset(path, document)
    for needed in ("StatefulSet", "Service", "Secret", "ServiceMonitor", "PrometheusRule"):
        if needed not in kinds:
            problems.append(f"{directory}: no {needed}")
    if problems:
        for problem in problems:
            print(f"kubernetes: {problem}", file=sys.stderr)
        sys.exit(1)
    print("kubernetes: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + " checked")


main()
