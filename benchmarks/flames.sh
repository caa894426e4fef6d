#!/usr/bin/env bash
# Flame graphs of the per-message paths, both ends (py-spy; pip install -e '.[profile]'):
#   bash benchmarks/flames.sh OUT_DIR [LABEL]
# writes OUT_DIR/{ordered,unreliable,rtt}-LABEL.svg, each of benchmarks/cpu_per_message.py WORKLOAD --seconds 3
# (64 B messages; the sender and, through --subprocesses, the receiving peer process), the way the "before"
# graphs in benchmarks/profiles/ were taken, and prints each workload's rate and CPU per message.
set -euo pipefail
out=${1:?usage: flames.sh OUT_DIR [LABEL]}
label=${2:-now}
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
spy=$(dirname "$py")/py-spy
mkdir -p "$out"
for workload in ordered unreliable rtt; do
    "$spy" record --subprocesses --rate 200 --output "$out/$workload-$label.svg" -- \
        "$py" benchmarks/cpu_per_message.py "$workload" --seconds 3
done
