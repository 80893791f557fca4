/**
 * The request side of the pool's events: a request finished on an instance (its warnings, its failure, an
 * encoder's rows done for routing), an instance's requests failed with it (died, hung, lost), and what the EC store
 * learns of instances (an encoder's identity, a Thinker's stored rows, a holder gone with its process).
 */
import { ErrorCodes, type SerializedError } from '../../common/errors.ts';
import { mediaFailedMessage } from '../../../stages/requestEvents.ts';
import { descriptorOf } from '../../../stages/registry.ts';
import type { EcStore } from '../ec/EcStore.ts';
import type { StagePool } from '../pool/StagePool.ts';
import type { InstanceView } from '../pool/StageInstance.ts';
import type { FinishedMessage } from '../pool/StagePoolEvents.ts';
import type { Migrations } from './Migrations.ts';
import type { RequestRegistry } from './RequestRegistry.ts';

export function followPool(
  pool: StagePool,
  requests: RequestRegistry,
  ec: EcStore | null,
  migrations: Migrations | null = null,
): void {
  const failed = (view: InstanceView, requestIds: readonly string[], error: SerializedError, hung: boolean) => {
    const reason = hung ? 'hung' : error.code === ErrorCodes.STAGE_DIED ? 'died' : 'lost';
    for (const requestId of requestIds) {
      if (view.spec.encoder) encoderFailed(pool, requests, view, requestId, error);
      else if (!migrations?.take(view, requestId, error, reason)) requests.ofRun(requestId)?.stream.end('error', error);
    }
  };
  pool.on('finished', (view, msg) => onFinished(pool, requests, view, msg));
  pool.on('hung', (view, requestIds, error) => failed(view, requestIds, error, true));
  pool.on('lost', (view, requestIds, error) => {
    ec?.forgetHolder(view.instance); // its in-process copies are gone with it
    failed(view, requestIds, error, false);
  });
  pool.on('ready', (view, facts) => {
    const identity = facts && descriptorOf(view.spec.kind).ecIdentity?.(facts);
    if (identity !== undefined) ec?.noteEncoder(view.spec.stageId, identity);
  });
  pool.on('ecStored', (instance, msg) => ec?.onStored(instance, msg));
}

function onFinished(pool: StagePool, requests: RequestRegistry, view: InstanceView, msg: FinishedMessage): void {
  const record = requests.ofRun(msg.requestId);
  if (view.spec.encoder) record?.encoderFinished(view.instance, Date.now());
  if (msg.warnings) record?.stream.addWarnings(msg.warnings);
  if (!msg.error || msg.finishReason === 'cancelled') return;
  // An encoder's failure may cost only its items (text_only); the routes decide and tell the Thinker.
  if (view.spec.encoder) encoderFailed(pool, requests, view, msg.requestId, msg.error);
  // A stage that failed a request before any chunk could carry the error (e.g. a rejected add) ends it here.
  else record?.stream.end('error', msg.error);
}

/** An encoder will not deliver a request's items: fail the request, or (text_only) let the Thinker drop them. */
function encoderFailed(
  pool: StagePool,
  requests: RequestRegistry,
  view: InstanceView,
  requestId: string,
  error: SerializedError,
): void {
  const record = requests.ofRun(requestId);
  if (!record || record.stream.finished) return;
  const outcome = record.encoderFailure(view.instance, error);
  if (outcome?.kind === 'fail') record.stream.end('error', outcome.error);
  else if (outcome) pool.send(outcome.thinker, mediaFailedMessage(requestId, view.instance, error));
}
