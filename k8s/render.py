#!/usr/bin/env python3
"""Renders a kustomization when `kubectl kustomize` is not installed: the subset of kustomize
these manifests use (resources, namespace, labels, images, replicas, strategic-merge patches
of Deployments, configMapGenerator with merge/replace, hashed ConfigMap names and the
references to them). Prints the YAML stream on stdout. `k8s/validate.sh` prefers kubectl's
kustomize and checks that both agree on what is rendered when both are there."""

import hashlib
import os
import sys

import yaml


def load_kustomization(directory):
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        return yaml.safe_load(f) or {}


def merge(base, patch):
    """Strategic merge: maps merge key by key; lists of named maps merge by `name`; other
    lists and scalars are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = merge(base[k], v) if k in base else v
        return out
    if (
        isinstance(base, list)
        and isinstance(patch, list)
        and all(isinstance(x, dict) and "name" in x for x in base + patch)
    ):
        out = list(base)
        for item in patch:
            for i, existing in enumerate(out):
                if existing["name"] == item["name"]:
                    out[i] = merge(existing, item)
                    break
            else:
                out.append(item)
        return out
    return patch


def generators(directory, k):
    out = {}
    for g in k.get("configMapGenerator", []):
        data = {}
        for f in g.get("files", []):
            with open(os.path.join(directory, f)) as fh:
                data[os.path.basename(f)] = fh.read()
        out[g["name"]] = (g.get("behavior", "create"), data)
    return out


def build(directory):
    k = load_kustomization(directory)
    resources, maps = [], {}
    for r in k.get("resources", []):
        path = os.path.join(directory, r)
        if os.path.isdir(path):
            sub_resources, sub_maps = build(path)
            resources += sub_resources
            maps.update(sub_maps)
        else:
            with open(path) as f:
                resources += [d for d in yaml.safe_load_all(f) if d]
    for name, (behavior, data) in generators(directory, k).items():
        if behavior == "merge" and name in maps:
            maps[name] = {**maps[name], **data}
        else:
            maps[name] = data
    for p in k.get("patches", []):
        with open(os.path.join(directory, p["path"])) as f:
            patch = yaml.safe_load(f)
        for i, r in enumerate(resources):
            if r["kind"] == patch["kind"] and r["metadata"]["name"] == patch["metadata"]["name"]:
                resources[i] = merge(r, patch)
    for rep in k.get("replicas", []):
        for r in resources:
            if r["metadata"]["name"] == rep["name"]:
                r["spec"]["replicas"] = rep["count"]
    for img in k.get("images", []):
        for r in resources:
            for c in r.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                if c["image"].split(":")[0] == img["name"]:
                    c["image"] = f'{img.get("newName", img["name"])}:{img.get("newTag", "latest")}'
    for lab in k.get("labels", []):
        for r in resources:
            r["metadata"].setdefault("labels", {}).update(lab.get("pairs", {}))
    if "namespace" in k:
        for r in resources:
            if r["kind"] != "Namespace":
                r["metadata"]["namespace"] = k["namespace"]
    return resources, maps


def main(directory):
    resources, maps = build(directory)
    namespace = load_kustomization(directory).get("namespace")
    hashed = {}
    for name, data in maps.items():
        digest = hashlib.sha256(repr(sorted(data.items())).encode()).hexdigest()[:10]
        hashed[name] = f"{name}-{digest}"
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": hashed[name]}, "data": data}
        if namespace:
            cm["metadata"]["namespace"] = namespace
        resources.append(cm)
    for r in resources:
        for v in r.get("spec", {}).get("template", {}).get("spec", {}).get("volumes", []):
            if "configMap" in v and v["configMap"]["name"] in hashed:
                v["configMap"]["name"] = hashed[v["configMap"]["name"]]
    yaml.safe_dump_all(resources, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
