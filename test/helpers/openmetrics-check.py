#!/usr/bin/python3
"""Parses an OpenMetrics exposition from stdin with the Prometheus Python client's strict
OpenMetrics parser (Debian python3-prometheus-client) and prints a JSON summary:
{"families": {name: type}, "samples": N, "exemplars": [{"name", "labels", "exemplar"}]}.
Exit 1 with the parser's message on stderr when the exposition is invalid."""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

text = sys.stdin.read()
try:
    families = list(text_string_to_metric_families(text))
except Exception as e:  # the parser raises ValueError (and others) on invalid input
    sys.stderr.write(f"invalid OpenMetrics: {e}\n")
    sys.exit(1)
out = {"families": {}, "units": {}, "samples": 0, "exemplars": []}
for f in families:
    out["families"][f.name] = f.type
    if f.unit:
        out["units"][f.name] = f.unit
    for s in f.samples:
        out["samples"] += 1
        if s.exemplar is not None:
            out["exemplars"].append({
                "name": s.name,
                "labels": s.labels,
                "exemplar": {"labels": s.exemplar.labels, "value": s.exemplar.value, "timestamp": float(s.exemplar.timestamp) if s.exemplar.timestamp is not None else None},
            })
json.dump(out, sys.stdout)
