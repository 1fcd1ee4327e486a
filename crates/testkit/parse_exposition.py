"""Parse an exposition from stdin with the reference parsers of the Python prometheus_client.

Usage: parse_exposition.py openmetrics|text

openmetrics uses prometheus_client.openmetrics.parser (strict: it rejects anything
OpenMetrics 1.0 forbids); text uses prometheus_client.parser (Prometheus text 0.0.4).
Prints the families as JSON: [{"name", "type", "samples": [{"name", "labels", "value"}]}].
Exits 1 with the parser's message when the input is refused.
"""

import json
import math
import sys

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as parse_text


def main() -> int:
    data = sys.stdin.buffer.read().decode("utf-8")
    parse = {"openmetrics": parse_openmetrics, "text": parse_text}[sys.argv[1]]
    try:
        families = [
            {
                "name": family.name,
                "type": family.type,
                "samples": [
                    {
                        "name": sample.name,
                        "labels": sample.labels,
                        "value": None if math.isnan(sample.value) else sample.value,
                    }
                    for sample in family.samples
                ],
            }
            for family in parse(data)
        ]
    except Exception as error:  # the parsers raise ValueError and friends
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 1
    json.dump(families, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
