/**
 * What crosses between the bench (serverProcess.ts) and the process of a server it starts (serverProcessEntry.ts),
 * one discriminated union each way.
 */
import type { ErrorCodes, PacketMark } from '../../src/basics.ts';
import type { RemoteStageHostOptions, SpawnedProcess } from './RemoteStageHost.ts';
import type { ServerSideTiming } from './ServerTimings.ts';

export type ToServer =
  /** Start the server of this YAML text (the file: where its relative paths resolve); marks: hear main's marks. */
  | {
      readonly type: 'start';
      readonly text: string;
      readonly file: string;
      readonly marks: boolean;
      readonly options: Omit<RemoteStageHostOptions, 'log'>;
    }
  /** Main's marks and server-side times of these requests (what else was kept is dropped). */
  | { readonly type: 'collect'; readonly requestIds: readonly string[] }
  | { readonly type: 'close' };

export type FromServer =
  | { readonly type: 'booted' }
  /** A process its remote stages' host started (RemoteStageHost's spawnedChannel, heard again in the bench). */
  | { readonly type: 'spawned'; readonly process: SpawnedProcess }
  | { readonly type: 'ready'; readonly baseUrl: string; readonly remote: string | null }
  | {
      readonly type: 'failed';
      readonly message: string;
      /** The error's code (a ChorusError's), when it had one. */
      readonly code?: (typeof ErrorCodes)[keyof typeof ErrorCodes];
    }
  | {
      readonly type: 'collected';
      readonly marks: readonly PacketMark[];
      readonly timings: readonly (readonly [string, ServerSideTiming])[];
    };
