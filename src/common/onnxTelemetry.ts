/**
 * onnxruntime-node (1.29 and later) starts Microsoft's 1DS telemetry when it creates its environment: every process
 * that opens a session writes an empty `mat-debug-<pid>.log` into its TMPDIR (hundreds a day on a test machine) and
 * queues device and session events for upload. A server that runs offline, or for tenants, sends nothing its operator
 * did not choose, so Chorus turns it off, unless the operator set ORT_DISABLE_TELEMETRY already (`0` keeps it on).
 * onnxruntime reads the variable when it creates its environment, at the first session a process opens, so every
 * place that opens a session calls this first (measured: set after the module is loaded and before the first session,
 * no log file; `0` or unset, one per process). A worker thread's process.env is its own copy, which Node does not write
 * to the process's environment: a thread that opens sessions (the VAD workers) is started after a call on its parent.
 */
export function onnxTelemetryOff(): void {
  process.env.ORT_DISABLE_TELEMETRY ??= '1';
}
