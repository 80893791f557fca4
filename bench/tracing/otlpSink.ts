/**
 * The bench's OTLP sink (bench/ttfp/tracingMode.ts OtlpSink) in a process of its own, for runs that must not charge
 * the collector's work to the servers they measure (serveRounds.ts): prints `otlp sink <url>` once listening, and
 * what it received when SIGTERM ends it.
 *
 *   node --import tsx bench/tracing/otlpSink.ts
 */
import { OtlpSink } from '../ttfp/tracingMode.ts';

const sink = await OtlpSink.start();
process.stdout.write(`otlp sink ${sink.url}\n`);
process.once('SIGTERM', () => {
  process.stdout.write(`otlp sink received ${sink.exports} exports, ${sink.bytes} bytes\n`);
  void sink.close().then(() => process.exit(0));
});
