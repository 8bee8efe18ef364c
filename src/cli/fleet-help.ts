/** The epilog of `cuzk-exporter fleet --help` (small on purpose: main.ts loads it for every command). */
export const FLEET_HELP = `The targets file (YAML; --targets.file):

  targets:
    - name: gpu-17                     # becomes the instance label of its series
      labels: {rack: r3}               # optional; Prometheus attaches them (http_sd)
      grpc_address: 10.0.0.17:9820     # cuzk's [daemon] listen
      status_url: http://10.0.0.17:9821/status
      timeline_command: [ssh, gpu-17, journalctl, -fu, cuzk, -o, cat, --lines=0]
    - name: gpu-18
      grpc_address: unix:///run/curio/cuzk.sock
      timeline_file: /var/log/cuzk.log

Each target needs at least one surface. timeline_command is run without a shell; its
standard output is cuzk's log; it is restarted with back-off (1 s doubling to 60 s) when it
exits. The file is re-read when it changes and on SIGHUP; a bad file keeps the previous
targets (cuzk_exporter_errors_total{reason="targets_file"} at /metrics).

Endpoints: /probe?target=NAME (that prover's metrics), /metrics (this exporter's own),
/targets (Prometheus HTTP service discovery), / (the fleet page), /targets/NAME/ (a
prover's status page). Prometheus relabelling: README, "Monitoring a fleet".`;
