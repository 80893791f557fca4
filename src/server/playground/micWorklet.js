// The microphone's AudioWorklet module (mic.js adds it to the page's AudioContext). It runs in the
// AudioWorkletGlobalScope, not the page: mono input (the node downmixes) -> 20 ms pcm16 chunks posted to the page.
// The page's CSP allows scripts from 'self' and nothing else (no blob: or data: modules), so this is a served file.
import { MIC_CHUNK_SAMPLES, MIC_PROCESSOR, Resampler } from './pcm16.js';

class MicProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    // `sampleRate` is the worklet scope's global: the AudioContext's rate.
    this.resampler = new Resampler(sampleRate, MIC_CHUNK_SAMPLES, (pcm, rms) =>
      this.port.postMessage({ pcm, rms }, [pcm.buffer]),
    );
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (channel) this.resampler.push(channel);
    return true; // keep running while the page holds the node
  }
}

registerProcessor(MIC_PROCESSOR, MicProcessor);
