#!/usr/bin/env bash
# The fleet example, whole, on this machine (deploy/fleet/README.md): three simulated cuzk
# provers (`cuzk-exporter simulate`; box-3 with the historical status bug injected), one
# `cuzk-exporter fleet` attached to all three, VictoriaMetrics, Alertmanager and Prometheus
# with this folder's configs, on their default loopback ports. Ctrl-C stops everything.
#
#   deploy/fleet/demo.sh          (from a checkout, after npm install)
#
# Needs: prometheus, prometheus-alertmanager, victoria-metrics (Debian packages). Ports:
# 9464 (fleet exporter), 9090 (Prometheus), 9093 (Alertmanager), 8428 (VictoriaMetrics),
# 9820-9841 (the simulated provers).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cli=(node "$root/dist/src/cli/main.js")
work=$(mktemp -d "${TMPDIR:-/tmp}/cuzk-fleet-demo.XXXXXX")
pids=()
done_=0
cleanup() {
  [ "$done_" = 1 ] && return
  done_=1
  # One at a time, newest first: Prometheus flushes to VictoriaMetrics as it stops, so it
  # must be gone before VictoriaMetrics goes; each gets 10 s, then SIGKILL.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null || continue
    for _ in $(seq 100); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.1; done
    kill -9 "${pids[i]}" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 0' INT TERM
start() {
  local name=$1
  shift
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
}
for b in prometheus prometheus-alertmanager victoria-metrics; do
  command -v "$b" >/dev/null || { echo "demo.sh: $b not found (apt-get install prometheus prometheus-alertmanager victoria-metrics)" >&2; exit 1; }
done

# Three provers; box-2 has two GPUs; box-3 reproduces the historical status bug.
# (Each flag once per command: the CLI refuses one given twice.)
sim=(simulate --engine.backend sim --shutdown.grace 0s --log.level warn)
start box-1 "${cli[@]}" "${sim[@]}" --engine.time-scale 0.2 --simulate.grpc-listen 127.0.0.1:9820 --simulate.status-listen 127.0.0.1:9821 --simulate.timeline-file "$work/box-1.cuzk.log"
start box-2 "${cli[@]}" "${sim[@]}" --engine.time-scale 0.2 --engine.gpus 2 --simulate.grpc-listen 127.0.0.1:9830 --simulate.status-listen 127.0.0.1:9831 --simulate.timeline-file "$work/box-2.cuzk.log"
# box-3: SnapDeals only, one worker, a 1 s finalize tail (cuzk's b_g2_msm epilogue is of that
# order): the finalizer's clobber shows at the end of every job (/status idle while TIMELINE
# has the worker on its next partition), and the key alert fires for box-3 alone.
echo '{"sim": {"snap-update": {"synth_ms": 100, "gpu_ms": 250, "finalize_ms": 1000, "jitter": 0}}}' >"$work/box-3.engine.json"
start box-3 "${cli[@]}" "${sim[@]}" --engine.time-scale 1 --engine.config "$work/box-3.engine.json" --engine.workers-per-gpu 1 --workload.mix snap-update=1 --workload.concurrency 1 \
  --fault.status-bug-kind snap-update --simulate.grpc-listen 127.0.0.1:9840 --simulate.status-listen 127.0.0.1:9841 --simulate.timeline-file "$work/box-3.cuzk.log"

# box-1 and box-2 as a real deployment would read them (gRPC + the log through a command);
# box-3 with its /status too.
cat >"$work/targets.yml" <<TARGETS
targets:
  - name: box-1
    labels: {rack: r1}
    grpc_address: 127.0.0.1:9820
    timeline_command: [tail, -n, "0", -F, $work/box-1.cuzk.log]
  - name: box-2
    labels: {rack: r1}
    grpc_address: 127.0.0.1:9830
    timeline_command: [tail, -n, "0", -F, $work/box-2.cuzk.log]
  - name: box-3
    labels: {rack: r2}
    grpc_address: 127.0.0.1:9840
    status_url: http://127.0.0.1:9841/status
    timeline_file: $work/box-3.cuzk.log
TARGETS
start fleet "${cli[@]}" fleet --targets.file "$work/targets.yml" --web.listen-address 127.0.0.1:9464
start victoria-metrics victoria-metrics -storageDataPath "$work/vm" -httpListenAddr 127.0.0.1:8428 -retentionPeriod 1d
start alertmanager prometheus-alertmanager --config.file "$here/alertmanager.yml" --storage.path "$work/am" --web.listen-address 127.0.0.1:9093 --cluster.listen-address=
start prometheus prometheus --config.file "$here/prometheus.yml" --storage.tsdb.path "$work/prometheus" --web.listen-address 127.0.0.1:9090

cat <<MSG
cuzk fleet demo (logs in $work):
  fleet page:       http://127.0.0.1:9464/
  a prover:         http://127.0.0.1:9464/probe?target=box-3   (its page: http://127.0.0.1:9464/targets/box-3/)
  Prometheus:       http://127.0.0.1:9090/alerts
  Alertmanager:     http://127.0.0.1:9093/
  VictoriaMetrics:  http://127.0.0.1:8428/vmui/  (query job:cuzk_gpu_worker_utilization:ratio_rate5m)
Press Ctrl-C to stop.
MSG
# Stop everything as soon as any one of them ends (its log says why).
wait -n "${pids[@]}" || true
echo "demo.sh: a process ended; see the logs in $work" >&2
for f in "$work"/*.log; do echo "== $f" >&2; tail -n 5 "$f" >&2; done
exit 1
