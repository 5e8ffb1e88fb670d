"""Checks a directory written by `cuda-agent launch --emit k8s` (cluster/emit_test.cpp runs it).

Usage: python3 -I check_k8s_yaml.py DIR OUT

Every DIR/*.yaml must parse (PyYAML, Debian's python3-yaml) as one Kubernetes object, and the
objects must fit together: one ConfigMap, one headless Service, at most one Secret, StatefulSets
that name that Service, mount that ConfigMap (and Secret) and run the node agent with
`--host $(POD_NAME).SERVICE`. Writes the ConfigMap's manifest to OUT/manifest.toml and the
Secret's files, decoded, to OUT/keys/. Prints, sorted:
  pod HOST GPUS          for every pod: its DNS name and its nvidia.com/gpu limit
  env STATEFULSET NAME VALUE   for every plain environment variable
  mount STATEFULSET PATH       for every hostPath volume mounted at the same path
On a problem it prints "error: ..." and exits 1.
"""
import base64
import os
import sys

import yaml


def fail(message):
    print("error: " + message)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        fail("usage: check_k8s_yaml.py DIR OUT")
    directory, out = sys.argv[1], sys.argv[2]
    objects = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".yaml"):
            fail(name + " is not a .yaml file")
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            try:
                documents = list(yaml.safe_load_all(f))
            except yaml.YAMLError as e:
                fail(name + ": " + str(e))
        if len(documents) != 1 or not isinstance(documents[0], dict):
            fail(name + ": expected one object, got " + repr(documents)[:200])
        doc = documents[0]
        for key in ("apiVersion", "kind", "metadata"):
            if key not in doc:
                fail(name + ": no " + key)
        if not doc["metadata"].get("name"):
            fail(name + ": no metadata.name")
        objects.setdefault(doc["kind"], []).append((name, doc))

    if sorted(objects) not in (["ConfigMap", "Service", "StatefulSet"],
                               ["ConfigMap", "Secret", "Service", "StatefulSet"]):
        fail("unexpected kinds: " + ", ".join(sorted(objects)))
    for kind in ("ConfigMap", "Service", "Secret"):
        if len(objects.get(kind, [])) > 1:
            fail("more than one " + kind)

    configmap = objects["ConfigMap"][0][1]
    with open(os.path.join(out, "manifest.toml"), "w", encoding="utf-8") as f:
        f.write(configmap["data"]["manifest.toml"])
    secret = objects["Secret"][0][1] if "Secret" in objects else None
    if secret is not None:
        os.makedirs(os.path.join(out, "keys"), exist_ok=True)
        for key, value in secret["data"].items():
            with open(os.path.join(out, "keys", key), "wb") as f:
                f.write(base64.b64decode(value, validate=True))

    service = objects["Service"][0][1]
    service_name = service["metadata"]["name"]
    spec = service["spec"]
    if spec.get("clusterIP") != "None" or spec.get("publishNotReadyAddresses") is not True:
        fail("the Service is not headless with publishNotReadyAddresses")
    port_names = [p["name"] for p in spec["ports"]]
    if len(set(port_names)) != len(port_names) or any(len(n) > 15 for n in port_names):
        fail("Service port names must be unique and at most 15 characters: " + str(port_names))
    if not all(isinstance(p["port"], int) for p in spec["ports"]):
        fail("Service ports must be integers")

    lines = []
    for name, sts in objects["StatefulSet"]:
        sts_name = sts["metadata"]["name"]
        if len(sts_name) > 52:
            fail(name + ": StatefulSet name longer than 52 characters")
        s = sts["spec"]
        if s["serviceName"] != service_name:
            fail(name + ": serviceName is not " + service_name)
        pod_labels = s["template"]["metadata"]["labels"]
        for labels in (s["selector"]["matchLabels"], spec["selector"]):
            if any(pod_labels.get(k) != v for k, v in labels.items()):
                fail(name + ": a selector does not match the pod labels")
        pod = s["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        if volumes["manifest"]["configMap"]["name"] != configmap["metadata"]["name"]:
            fail(name + ": mounts another ConfigMap")
        if "curve-keys" in volumes and (secret is None or volumes["curve-keys"]["secret"][
                "secretName"] != secret["metadata"]["name"]):
            fail(name + ": mounts another Secret")
        (container,) = pod["containers"]
        args = container["args"]
        if container["command"] != ["cuda-agent"] or args[:4] != [
                "node-agent", "--manifest", "/etc/cuda-agent/manifest.toml", "--host"]:
            fail(name + ": not the node agent: " + str(container["command"] + args))
        if args[4:] != ["$(POD_NAME)." + service_name]:
            fail(name + ": --host is not $(POD_NAME)." + service_name)
        env = {e["name"]: e for e in container["env"]}
        if env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] != "metadata.name":
            fail(name + ": POD_NAME is not the pod's name")
        for e in container["env"]:
            if "value" in e:
                lines.append("env %s %s %s" % (sts_name, e["name"], e["value"]))
        for mount in container["volumeMounts"]:
            volume = volumes.get(mount["name"])
            if volume is None:
                fail(name + ": mounts the unknown volume " + mount["name"])
            if "hostPath" in volume:
                if volume["hostPath"]["path"] != mount["mountPath"]:
                    fail(name + ": hostPath " + mount["name"] + " is mounted elsewhere")
                lines.append("mount %s %s" % (sts_name, mount["mountPath"]))
        gpus = container.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0)
        if not isinstance(gpus, int):
            fail(name + ": the GPU limit is not an integer")
        for ordinal in range(s["replicas"]):
            lines.append("pod %s-%d.%s %d" % (sts_name, ordinal, service_name, gpus))
    for line in sorted(lines):
        print(line)


main()
