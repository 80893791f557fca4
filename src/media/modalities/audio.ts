/**
 * Audio: `input_audio` parts (base64 WAV or pcm16) -> 16 kHz samples in the audio encoder stage, 25 embeddings per
 * second (src/media/audio.ts), counted in main from the WAV header or the pcm16 length.
 */
import type { MediaBody } from '../../common/payloads.ts';
import { mediaInvalid } from '../mediaError.ts';
import { decodeBase64, decodeBase64Strict } from '../mediaUrl.ts';
import { prepareAudio } from '../prepareMedia.ts';
import { probeAudio } from '../probeMedia.ts';
import type { ModalityDef, PartOf } from './ModalityDef.ts';

export const audio: ModalityDef<'audio'> = {
  name: 'audio',
  encoder: 'audio',
  formats: ['wav', 'pcm16'],
  keyedBlocks: false,

  shapeProblem(part, at) {
    if (!(part.data instanceof Uint8Array)) return `${at}.data must be the audio bytes (a Uint8Array)`;
    if (part.format !== 'wav' && part.format !== 'pcm16') return `${at}.format must be wav or pcm16`;
    if (part.sampleRateHz !== undefined && (!Number.isInteger(part.sampleRateHz) || part.sampleRateHz < 1))
      return `${at}.sampleRateHz must be a positive integer`;
    return null;
  },

  layout(part, settings, what) {
    const probe = probeAudio(part.data, part.format, {
      pcm16RateHz: part.sampleRateHz,
      maxSeconds: settings.maxAudioSeconds,
      what,
    });
    return { numEmbeddings: probe.numEmbeddings };
  },

  body(part, item, what): MediaBody {
    return {
      kind: 'media',
      item,
      format: part.format,
      ...(part.sampleRateHz !== undefined ? { sampleRateHz: part.sampleRateHz } : {}),
      what,
      bytes: part.data,
    };
  },

  prepare(body, settings, encoderIdentity, cacheSalt) {
    if (body.format !== 'wav' && body.format !== 'pcm16')
      throw mediaInvalid(body.what, `the audio encoder got format ${body.format}`);
    const prepared = prepareAudio(body.bytes, body.format, {
      pcm16RateHz: body.sampleRateHz,
      maxSeconds: settings.maxAudioSeconds,
      what: body.what,
    });
    // The salt rides with the features: a per-window cache (AudioWindows) keys its windows with it.
    const salted = cacheSalt === undefined ? {} : { cacheSalt };
    return {
      key: prepared.cacheKey(encoderIdentity, cacheSalt),
      numEmbeddings: prepared.numEmbeddings,
      input: () => ({ ...prepared.features(), ...salted }),
    };
  },
};

/** A client's base64 audio -> the engine part. Only the transport is checked here (base64, empty). */
export function audioPart(
  base64: string,
  format: 'wav' | 'pcm16',
  what: string,
  sampleRateHz?: number,
): PartOf<'audio'> {
  // The fast strict decoder first; only when it refuses, the lenient one (line-wrapped base64) that names the item.
  const data = decodeBase64Strict(base64) ?? decodeBase64(base64, what);
  if (data.byteLength === 0) throw mediaInvalid(what, 'audio data is empty');
  return { type: 'audio', data, format, ...(sampleRateHz !== undefined ? { sampleRateHz } : {}) };
}
