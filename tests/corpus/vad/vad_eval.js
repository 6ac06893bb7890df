#!/usr/bin/env node
// The speech task metric of silero-vad: streams a model over the held-out audio of make_speech.py
// frame by frame, as the voice-activity wrapper that ships the model does (80 ms frames of 1280
// samples at 16 kHz, no context samples, the LSTM state hn/cn of one frame fed as h/c of the next,
// zeros at the start of a stream, speech when the probability is above 0.5), and prints one JSON
// object: per-frame decision agreement and probability differences against a reference model
// (the float model), each model carrying its own state, and how both models' decisions match
// the audio's speech labels.
//
//   node vad_eval.js --model M.onnx [--reference FP32.onnx] --data DIR [--set eval]
//                    [--dump DIR] [--threads 1] [--optimization disabled]
//
// DIR is make_speech.py's output: DIR/<set>/streams.json lists the streams, each a float32 .npy
// of 16 kHz samples and an int16 .npy of per-frame labels (k >= 0: inside utterance k, -1: a
// stretch of noise, -2: a stretch of silence). With --dump, the inputs the model was fed at every
// frame (h, c) and its probabilities are written to DIR/<stream>.{h,c,prob}.npy: how
// make_speech.py draws calibration samples from the float model's own states.
//
// ONNX Runtime runs on one thread, graph optimizations disabled (Q/DQ evaluated as ONNX defines
// them), so a run gives the same numbers every time.
'use strict';

const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy } = require('../../ort/npy.js');

const THRESHOLD = 0.5;

function parseArgs(argv) {
  const options = { set: 'eval', threads: 1, optimization: 'disabled' };
  const known = ['model', 'reference', 'data', 'set', 'dump', 'threads', 'optimization'];
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!known.includes(key) || argv[i + 1] === undefined) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    options[key] = key === 'threads' ? Number(argv[i + 1]) : argv[i + 1];
  }
  if (!options.model || !options.data) throw new Error('--model and --data are required');
  return options;
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    const root = path.resolve(__dirname, '..', '..', '..');
    throw new Error(`cannot load onnxruntime-node (${e.message}); run 'npm ci --ignore-scripts' ` +
                    `in ${root}`);
  }
}

// IEEE binary16 <-> binary32, round to nearest even: for models whose inputs or outputs to-fp16
// turned into float16.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function toHalf(value) {
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (half & 1))) half += 1;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1))) half += 1;
  return sign | half;
}
function fromHalf(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

function floatTensor(ort, type, values, dims) {
  if (type === 'float32') return new ort.Tensor('float32', Float32Array.from(values), dims);
  if (type === 'float16') return new ort.Tensor('float16', Uint16Array.from(values, toHalf), dims);
  throw new Error(`unsupported input type ${type}`);
}

function toFloat32(tensor) {
  if (tensor.type === 'float32') return tensor.data;
  if (tensor.type === 'float16') return Float32Array.from(tensor.data, fromHalf);
  throw new Error(`unsupported output type ${tensor.type}`);
}

// One model as the wrapper runs it: a session, and the state it carries between frames.
class Vad {
  static async create(ort, file, options) {
    const session = await ort.InferenceSession.create(file, {
      executionProviders: ['cpu'],
      graphOptimizationLevel: options.optimization,
      intraOpNumThreads: options.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
    const vad = new Vad();
    vad.ort = ort;
    vad.file = file;
    vad.session = session;
    vad.types = {};
    for (const meta of session.inputMetadata) vad.types[meta.name] = meta.type;
    for (const name of ['input', 'h', 'c']) {
      if (!(name in vad.types)) throw new Error(`${file}: the model has no input '${name}'`);
    }
    // A model specialized to 16 kHz (specialize{inputs=sr:16000}) has no 'sr' input.
    vad.feedsSr = 'sr' in vad.types;
    for (const name of ['output', 'hn', 'cn']) {
      if (!session.outputNames.includes(name)) {
        throw new Error(`${file}: the model has no output '${name}'`);
      }
    }
    vad.sr = new ort.Tensor('int64', [16000n], []);
    return vad;
  }

  reset() {
    this.h = floatTensor(this.ort, this.types.h, new Float32Array(128), [2, 1, 64]);
    this.c = floatTensor(this.ort, this.types.c, new Float32Array(128), [2, 1, 64]);
  }

  // The state output as the next frame's state input (converted when their types differ).
  carried(tensor, name) {
    if (tensor.type === this.types[name]) return tensor;
    return floatTensor(this.ort, this.types[name], toFloat32(tensor), tensor.dims);
  }

  async step(frame) {
    const input = floatTensor(this.ort, this.types.input, frame, [1, frame.length]);
    const fedH = this.h;
    const fedC = this.c;
    const feeds = { input, h: fedH, c: fedC };
    if (this.feedsSr) feeds.sr = this.sr;
    const res = await this.session.run(feeds);
    this.h = this.carried(res.hn, 'h');
    this.c = this.carried(res.cn, 'c');
    return { prob: toFloat32(res.output)[0], h: toFloat32(fedH), c: toFloat32(fedC) };
  }
}

// How one model's decisions match the audio's labels.
function labelStats(probs, labels) {
  const count = { speech: 0, noise: 0, silence: 0 };
  const called = { speech: 0, noise: 0, silence: 0 };
  const utterances = new Map();
  let speechFrames = 0;
  for (let i = 0; i < probs.length; ++i) {
    const kind = labels[i] >= 0 ? 'speech' : labels[i] === -1 ? 'noise' : 'silence';
    const speech = probs[i] > THRESHOLD;
    count[kind] += 1;
    if (speech) {
      called[kind] += 1;
      speechFrames += 1;
    }
    if (labels[i] >= 0) {
      const u = utterances.get(labels[i]) || { frames: 0, called: 0 };
      u.frames += 1;
      if (speech) u.called += 1;
      utterances.set(labels[i], u);
    }
  }
  const ratio = (a, b) => (b > 0 ? a / b : null);
  let detected = 0;
  for (const u of utterances.values()) if (u.called * 2 >= u.frames) detected += 1;
  return {
    speech_fraction: ratio(speechFrames, probs.length),
    recall: ratio(called.speech, count.speech),
    false_alarm_noise: ratio(called.noise, count.noise),
    false_alarm_silence: ratio(called.silence, count.silence),
    utterances: utterances.size,
    utterances_detected: detected,
    counts: count,
    called,
  };
}

function mergeLabelStats(parts) {
  const count = { speech: 0, noise: 0, silence: 0 };
  const called = { speech: 0, noise: 0, silence: 0 };
  let utterances = 0;
  let detected = 0;
  for (const p of parts) {
    for (const k of Object.keys(count)) {
      count[k] += p.counts[k];
      called[k] += p.called[k];
    }
    utterances += p.utterances;
    detected += p.utterances_detected;
  }
  const frames = count.speech + count.noise + count.silence;
  const ratio = (a, b) => (b > 0 ? a / b : null);
  return {
    speech_fraction: ratio(called.speech + called.noise + called.silence, frames),
    label_speech_fraction: ratio(count.speech, frames),
    recall: ratio(called.speech, count.speech),
    false_alarm_noise: ratio(called.noise, count.noise),
    false_alarm_silence: ratio(called.silence, count.silence),
    utterances,
    utterances_detected: detected,
  };
}

function writeStack(file, rows, dims) {
  const out = new Float32Array(rows.length * rows[0].length);
  rows.forEach((row, i) => out.set(row, i * row.length));
  writeNpy(file, 'float32', out, [rows.length, ...dims]);
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const started = process.hrtime.bigint();
  const setDir = path.join(options.data, options.set);
  const streamsFile = path.join(setDir, 'streams.json');
  if (!fs.existsSync(streamsFile)) throw new Error(`${streamsFile} is missing; run make_speech.py`);
  const set = JSON.parse(fs.readFileSync(streamsFile, 'utf8'));
  const frameSize = set.frame_samples;

  const model = await Vad.create(ort, options.model, options);
  const reference = options.reference ? await Vad.create(ort, options.reference, options) : null;
  if (options.dump) fs.mkdirSync(options.dump, { recursive: true });

  let frames = 0;
  let agree = 0;
  let maxDiff = 0;
  let sumDiff = 0;
  let worst = null;
  let nonFinite = 0;
  const perStream = [];
  const modelStats = [];
  const referenceStats = [];
  for (const stream of set.streams) {
    const audio = readNpy(path.join(setDir, stream.audio)).data;
    const labels = readNpy(path.join(setDir, stream.labels)).data;
    const count = Math.floor(audio.length / frameSize);
    if (labels.length !== count) {
      throw new Error(`${stream.labels}: ${labels.length} labels for ${count} frames`);
    }
    model.reset();
    if (reference) reference.reset();
    const probs = new Float32Array(count);
    const refProbs = new Float32Array(count);
    const fedH = [];
    const fedC = [];
    let streamAgree = 0;
    let streamMax = 0;
    for (let i = 0; i < count; ++i) {
      const frame = audio.subarray(i * frameSize, (i + 1) * frameSize);
      const m = await model.step(frame);
      probs[i] = m.prob;
      if (options.dump) {
        fedH.push(m.h);
        fedC.push(m.c);
      }
      if (!reference) continue;
      const r = await reference.step(frame);
      refProbs[i] = r.prob;
      const diff = Number.isFinite(m.prob) ? Math.abs(m.prob - r.prob) : Infinity;
      if (!Number.isFinite(m.prob)) nonFinite += 1;
      const same = (m.prob > THRESHOLD) === (r.prob > THRESHOLD);
      if (same) streamAgree += 1;
      if (diff > streamMax) streamMax = diff;
      if (diff > maxDiff) {
        maxDiff = diff;
        worst = { stream: stream.name, frame: i, prob: m.prob, reference_prob: r.prob };
      }
      sumDiff += diff;
    }
    frames += count;
    agree += streamAgree;
    const ms = labelStats(probs, labels);
    modelStats.push(ms);
    const entry = { name: stream.name, noise: stream.noise, snr_db: stream.snr_db, frames: count,
                    speech_fraction: ms.speech_fraction, recall: ms.recall };
    if (reference) {
      const rs = labelStats(refProbs, labels);
      referenceStats.push(rs);
      entry.agreement = streamAgree / count;
      entry.max_abs_diff = Number.isFinite(streamMax) ? streamMax : 'inf';
      entry.reference_speech_fraction = rs.speech_fraction;
      entry.reference_recall = rs.recall;
    }
    perStream.push(entry);
    if (options.dump) {
      writeStack(path.join(options.dump, `${stream.name}.h.npy`), fedH, [2, 1, 64]);
      writeStack(path.join(options.dump, `${stream.name}.c.npy`), fedC, [2, 1, 64]);
      writeNpy(path.join(options.dump, `${stream.name}.prob.npy`), 'float32', probs, [count]);
    }
  }

  const result = { model: options.model, set: options.set, streams: set.streams.length, frames,
                   frame_samples: frameSize, model_labels: mergeLabelStats(modelStats) };
  if (reference) {
    Object.assign(result, {
      reference: options.reference,
      agreement: agree / frames,
      disagreeing_frames: frames - agree,
      // JSON has no infinity: a model that gave NaN or infinity on some frame reads 'inf'.
      max_abs_diff: Number.isFinite(maxDiff) ? maxDiff : 'inf',
      mean_abs_diff: Number.isFinite(sumDiff) ? sumDiff / frames : 'inf',
      nonfinite_frames: nonFinite,
      worst_frame: worst,
      reference_labels: mergeLabelStats(referenceStats),
    });
  }
  result.per_stream = perStream;
  result.seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(JSON.stringify(result, null, 1));
}

main().catch((e) => {
  console.error(`vad_eval.js: ${e.message}`);
  process.exit(1);
});
