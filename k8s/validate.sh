#!/usr/bin/env bash
# Validates the Kubernetes manifests: renders the base and every overlay (kubectl's
# kustomize when installed, else k8s/render.py) and checks each resource against the
# Kubernetes JSON schemas, strictly (unknown fields rejected), for the oldest and newest
# Kubernetes versions the validator knows. The validator is `kubernetes-validate` from PyPI
# (schemas bundled, no network at validation time), installed into a virtualenv here.
set -euo pipefail
cd "$(dirname "$0")"
venv="${EVIDENT_K8S_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/evident/k8s-venv}"
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==1.37.0" PyYAML
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
for dir in base overlays/*/; do
  dir="${dir%/}"
  name="$(echo "$dir" | tr / -)"
  "$venv/bin/python" render.py "$dir" > "$out/$name.py.yaml"
  if command -v kubectl >/dev/null 2>&1; then
    kubectl kustomize "$dir" > "$out/$name.yaml"
    # Both renderers must produce the same resources (names modulo ConfigMap hashes).
    list() { "$venv/bin/python" -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d: print(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"].rsplit("-", 1)[0] if d["kind"] == "ConfigMap" else d["metadata"]["name"])' "$1" | sort; }
    if ! diff <(list "$out/$name.yaml") <(list "$out/$name.py.yaml"); then
      echo "render.py and kubectl kustomize disagree on $dir" >&2
      status=1
    fi
  else
    cp "$out/$name.py.yaml" "$out/$name.yaml"
  fi
  for version in 1.29.0 1.37.0; do
    if ! "$venv/bin/kubernetes-validate" --strict --quiet -k "$version" "$out/$name.yaml"; then
      echo "k8s/$dir is not valid for Kubernetes $version" >&2
      status=1
    fi
  done
  echo "k8s/$dir: $(grep -c '^kind:' "$out/$name.yaml") resources valid for Kubernetes 1.29 and 1.37"
done
exit $status
