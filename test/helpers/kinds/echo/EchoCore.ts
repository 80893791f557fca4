/**
 * The echo kind's core: a request's prompt written back to its targets as text, one echo per interval, up to
 * sampling.maxTokens echoes (finish reason length) or until main says `stop` (finish reason stop). Nothing it
 * knows is in src/worker or src/engine: its arguments, stats and message are its protocol's.
 */
import { ChorusError, ErrorCodes } from '../../../../src/common/errors.ts';
import type { AddRequest, StageStats } from '../../../../src/worker/messages.ts';
import { StageCore, type CoreRequest } from '../../../../src/worker/StageCore.ts';
import { isEchoStop, type EchoArgs, type EchoStats } from './protocol.ts';

interface EchoRequest extends CoreRequest {
  readonly tokenIds: readonly number[];
  readonly intervalMs: number;
  nextAtMs: number;
  paused: boolean;
}

export class EchoCore extends StageCore<EchoRequest, EchoArgs> {
  private echoes = 0;
  private stopped = 0;

  protected admit(msg: AddRequest<EchoArgs>): EchoRequest {
    const { tokenIds, intervalMs } = msg.args;
    if (!Array.isArray(tokenIds) || tokenIds.length === 0)
      throw new ChorusError(ErrorCodes.REQUEST_INVALID, `request ${msg.requestId}: nothing to echo`);
    return { ...msg, numOutputs: 0, tokenIds, intervalMs, nextAtMs: 0, paused: false };
  }

  protected onChunk(req: EchoRequest): void {
    this.fail(req, new ChorusError(ErrorCodes.FRAME_INVALID, 'the echo kind takes no input chunks'));
  }

  override onKindMessage(requestId: string | undefined, body: unknown): void {
    const req = requestId === undefined ? undefined : this.requests.get(requestId);
    if (!req || !isEchoStop(body)) return;
    this.stopped++;
    this.finish(req, 'stop');
  }

  pause(requestId: string): void {
    const req = this.requests.get(requestId);
    if (req) req.paused = true;
  }

  resume(requestId: string): void {
    const req = this.requests.get(requestId);
    if (req) req.paused = false;
  }

  override nextWakeAtMs(): number | null {
    const due = [...this.requests.values()].filter((r) => !r.paused).map((r) => r.nextAtMs);
    return due.length > 0 ? Math.min(...due) : null;
  }

  step(): boolean {
    const now = Date.now();
    const due = [...this.requests.values()].filter((r) => !r.paused && r.nextAtMs <= now);
    if (due.length === 0) return false;
    const started = performance.now();
    for (const req of due) {
      this.send(req, req.downstream, { kind: 'text', tokenIds: [...req.tokenIds] });
      this.echoes++;
      req.nextAtMs = now + req.intervalMs;
      if (++req.numOutputs >= req.sampling.maxTokens) this.finish(req, 'length');
    }
    this.recordStep(due.length, started, () => due.map((r) => [r.requestId, 1] as const));
    return true;
  }

  protected freeState(): void {}

  protected queueDepth(): number {
    return 0;
  }

  override stats(): StageStats {
    const kind: EchoStats = { echo: { echoes: this.echoes, stopped: this.stopped } };
    return { ...super.stats(), kind };
  }
}
