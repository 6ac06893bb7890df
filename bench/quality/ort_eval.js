#!/usr/bin/env node
// Runs one ONNX model with ONNX Runtime (onnxruntime-node, CPU, graph optimizations disabled so
// Q/DQ are evaluated as ONNX defines them) on every sample folder of a data set, loading the
// model once: the quality benchmark's evaluator (run_quality.py).
//
//   node ort_eval.js --model M.onnx --samples DIR --outputs DIR [--threads N]
//
// DIR holds sample_NNN/<input>.npy folders (qopt's --calib-data layout); the model's first
// output for each is written to OUTPUTS/sample_NNN.npy, output i > 0 to sample_NNN.outI.npy.
'use strict';

const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy } = require('../../tests/ort/npy.js');

function parseArgs(argv) {
  const options = { threads: 2 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!['model', 'samples', 'outputs', 'threads'].includes(key) || argv[i + 1] === undefined) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    options[key] = key === 'threads' ? Number(argv[i + 1]) : argv[i + 1];
  }
  if (!options.model || !options.samples || !options.outputs) {
    throw new Error('--model, --samples and --outputs are required');
  }
  return options;
}

function fileStem(name) {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_');
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const ort = require('onnxruntime-node');
  const session = await ort.InferenceSession.create(options.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'disabled',
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  fs.mkdirSync(options.outputs, { recursive: true });
  const samples = fs.readdirSync(options.samples).filter((d) => d.startsWith('sample_')).sort();
  if (samples.length === 0) throw new Error(`${options.samples}: no sample_* folders`);
  for (const sample of samples) {
    const feeds = {};
    for (const name of session.inputNames) {
      const file = path.join(options.samples, sample, `${fileStem(name)}.npy`);
      const { type, data, dims } = readNpy(file);
      feeds[name] = new ort.Tensor(type, data, dims);
    }
    const results = await session.run(feeds);
    session.outputNames.forEach((output, i) => {
      const t = results[output];
      const file = i === 0 ? `${sample}.npy` : `${sample}.out${i}.npy`;
      writeNpy(path.join(options.outputs, file), t.type, t.data, t.dims);
    });
  }
}

main().catch((e) => {
  console.error(`ort_eval.js: ${e.message}`);
  process.exit(1);
});
