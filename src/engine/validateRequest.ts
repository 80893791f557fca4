/** Checks a GenerateRequest before any stage sees it; errors say what to change. */
import { isMediaModality, MODALITIES, modalityOf } from '../media/modalities/index.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { ContentPart, GenerateRequest } from '../common/engine.ts';

const OUTPUT_MODALITIES = new Set(['text', 'audio']);

export function validateRequest(r: GenerateRequest): void {
  const bad = (message: string) => new ChorusError(ErrorCodes.REQUEST_INVALID, message);
  if (!Array.isArray(r.messages) || r.messages.length === 0) throw bad('messages must be a non-empty array');
  for (const [i, m] of r.messages.entries()) {
    if (typeof m?.content !== 'string' && !Array.isArray(m?.content))
      throw bad(`messages[${i}].content must be a string or a list of parts`);
    if (Array.isArray(m.content))
      (m.content as readonly ContentPart[]).forEach((part, j) => checkPart(part, `messages[${i}].content[${j}]`, bad));
    if (!['system', 'user', 'assistant', 'tool'].includes(m.role))
      throw bad(`messages[${i}].role must be system, user, assistant or tool`);
  }
  if (!Array.isArray(r.modalities) || r.modalities.length === 0)
    throw bad('modalities must name at least one of text, audio');
  for (const m of r.modalities)
    if (!OUTPUT_MODALITIES.has(m)) throw bad(`unknown modality "${m}": use text and/or audio`);
  if (r.requestId !== undefined && !/^[A-Za-z0-9._:-]{1,128}$/.test(r.requestId))
    throw bad('requestId must be 1-128 characters of [A-Za-z0-9._:-]');
  const max = r.sampling?.maxTokens;
  if (max !== undefined && (!Number.isInteger(max) || max < 1)) throw bad('maxTokens must be a positive integer');
  const ic = r.initialCodecChunkFrames;
  if (ic !== undefined && (!Number.isInteger(ic) || ic < 1))
    throw bad('initialCodecChunkFrames must be a positive integer');
  const target = r.ttfpTargetMs;
  if (target !== undefined && !(Number.isFinite(target) && target > 0))
    throw bad('ttfpTargetMs must be a positive number of milliseconds');
  // Checked here: a stage's control guard drops an add whose traceparent is not a string, which would strand it.
  if (r.traceparent !== undefined && typeof r.traceparent !== 'string')
    throw bad('traceparent must be a W3C traceparent string');
  const g = r.grammar;
  if (
    g !== undefined &&
    !(
      g.type === 'json_object' ||
      (g.type === 'json_schema' && typeof g.schema === 'string') ||
      (g.type === 'structural_tag' && typeof g.tag === 'string')
    )
  )
    throw bad(
      'grammar must be {type: json_object}, {type: json_schema, schema: text} or {type: structural_tag, tag: text}',
    );
  if (r.cacheSalt !== undefined && (typeof r.cacheSalt !== 'string' || r.cacheSalt.length === 0))
    throw bad('cacheSalt must be a non-empty string');
  const lp = r.logprobs;
  if (lp !== undefined && !(Number.isInteger(lp) && lp >= 0 && lp <= 20))
    throw bad('logprobs must be the number of top alternatives to report, an integer 0-20');
}

/** The shape of a part; whether its bytes decode is the media probe's business (CHORUS_ERR_MEDIA_INVALID). */
function checkPart(part: ContentPart, at: string, bad: (message: string) => ChorusError): void {
  switch (part?.type) {
    case 'text':
      if (typeof part.text !== 'string') throw bad(`${at}.text must be a string`);
      return;
    default: {
      if (!isMediaModality(part?.type)) throw bad(`${at}.type must be text, ${MODALITIES.join(', ')}`);
      const problem = modalityOf(part).shapeProblem(part, at);
      if (problem !== null) throw bad(problem);
    }
  }
}
