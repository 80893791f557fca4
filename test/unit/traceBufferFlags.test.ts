/** `chorus serve --trace-buffer`: what it sets up, and the combinations it refuses instead of ignoring. */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/common/cliArgs.ts';
import { DEFAULT_TRACE_BUFFER_BYTES, traceBufferFromFlags } from '../../src/cli/traceBufferFlags.ts';
import { TRACE_SINK_TOKEN_ENV, TRACE_SINK_URL_ENV, tracingConfigured } from '../../src/tracing/tracing.ts';

describe('--trace-buffer', () => {
  it('is off without the flag, and refuses --trace-buffer-bytes alone', async () => {
    expect(await traceBufferFromFlags(undefined, undefined, {})).toBeNull();
    await expect(traceBufferFromFlags(undefined, 4096, {})).rejects.toThrow(UsageError);
  });

  it('refuses settings that turn tracing off, naming them', async () => {
    await expect(traceBufferFromFlags(5, undefined, { OTEL_SDK_DISABLED: 'true' })).rejects.toThrow(
      /OTEL_SDK_DISABLED/,
    );
    await expect(traceBufferFromFlags(5, undefined, { OTEL_TRACES_EXPORTER: 'none' })).rejects.toThrow(UsageError);
  });

  it('starts the buffer and names its sink in the environment the stages inherit, which turns tracing on', async () => {
    const env: NodeJS.ProcessEnv = {};
    const on = (await traceBufferFromFlags(5, undefined, env))!;
    try {
      expect(on.buffer.limits).toEqual({ maxTraces: 5, maxBytes: DEFAULT_TRACE_BUFFER_BYTES });
      expect(env[TRACE_SINK_URL_ENV]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/traces$/);
      expect(env[TRACE_SINK_TOKEN_ENV]).toMatch(/^[0-9a-f]{48}$/);
      expect(tracingConfigured(env)).toBe(true);
    } finally {
      await on.sink.close();
    }
  });
});
