#!/usr/bin/env bash
# The Kubernetes manifests without a cluster: kubernetes-validate (PyPI) checks the core kinds
# strictly against the schemas of a current Kubernetes release, and kubernetes_check.py checks
# the ServiceMonitors and the PrometheusRule against the prometheus-operator CRD fields they
# use, and the StatefulSet's operating rules (probes, non-root, read-only root, resources, the
# token as a mounted file). The rules inside the PrometheusRule go through promtool elsewhere.
#
# Usage: tests/e2e/kubernetes.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=target/kubernetes-venv
if ! "$venv/bin/python" -c 'import kubernetes_validate, jsonschema, yaml' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate==1.37.0
fi
version=1.37.0
core=()
for manifest in deploy/kubernetes/*.yaml; do
    grep -q '^apiVersion: "\?monitoring.coreos.com/' "$manifest" || core+=("$manifest")
done
"$venv/bin/kubernetes-validate" -k 1.37.0 --strict --quiet "${core[@]}" ||
    { echo "kubernetes: a manifest does not fit the Kubernetes schemas" >&2; exit 1; }
echo "kubernetes: ${#core[@]} core manifests valid (strict) for Kubernetes $version"
"$venv/bin/python" tests/e2e/kubernetes_check.py deploy/kubernetes
