#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (onnxruntime-node, CPU) on .npy inputs: the reference
// for qopt's differential tests and the baseline of its interpreter benchmarks.
//
//   node run_ort.js --model M.onnx --inputs DIR [--outputs DIR] [--threads N]
//                   [--optimization disabled|basic|extended|all] [--runs N] [--warmup N]
//
// Inputs are read from DIR/<graph input name>.npy. Each output is written to DIR/<name>.npy, with
// characters outside [A-Za-z0-9_.-] replaced by '_' (as qopt-run names its files), and
// DIR/outputs.json lists the output names in order. String tensors, which .npy holds only as
// pickled objects, are DIR/<name>.json instead: {"dims": [...], "data": ["...", ...]}. With
// --runs, the model is run that many times after --warmup runs and one JSON line with the
// latencies (ms) is printed; min_cpu_ms is the least CPU time (all threads of the process) a run
// took.
'use strict';

const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy } = require('./npy.js');

function parseArgs(argv) {
  const options = { threads: 1, optimization: 'disabled', runs: 0, warmup: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`missing value for ${argv[i]}`);
    if (!['model', 'inputs', 'outputs', 'threads', 'optimization', 'runs', 'warmup'].includes(key)) {
      throw new Error(`unknown option ${argv[i]}`);
    }
    options[key] = ['threads', 'runs', 'warmup'].includes(key) ? Number(value) : value;
  }
  if (!options.model || !options.inputs) throw new Error('--model and --inputs are required');
  return options;
}

function fileStem(name) {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_');
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    const root = path.resolve(__dirname, '..', '..');
    throw new Error(`cannot load onnxruntime-node (${e.message}); run 'npm ci --ignore-scripts' ` +
                    `in ${root}`);
  }
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(options.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: options.optimization,
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const feeds = {};
  for (const name of session.inputNames) {
    const strings = path.join(options.inputs, `${fileStem(name)}.json`);
    if (fs.existsSync(strings)) {
      const { dims, data } = JSON.parse(fs.readFileSync(strings, 'utf8'));
      feeds[name] = new ort.Tensor('string', data, dims);
      continue;
    }
    const file = path.join(options.inputs, `${fileStem(name)}.npy`);
    const { type, data, dims } = readNpy(file);
    feeds[name] = new ort.Tensor(type, data, dims);
  }
  let results = await session.run(feeds);
  if (options.outputs) {
    fs.mkdirSync(options.outputs, { recursive: true });
    for (const name of session.outputNames) {
      const t = results[name];
      if (t.type === 'string') {
        fs.writeFileSync(path.join(options.outputs, `${fileStem(name)}.json`),
                         JSON.stringify({ dims: t.dims, data: Array.from(t.data) }));
        continue;
      }
      writeNpy(path.join(options.outputs, `${fileStem(name)}.npy`), t.type, t.data, t.dims);
    }
    fs.writeFileSync(path.join(options.outputs, 'outputs.json'), JSON.stringify(session.outputNames));
  }
  if (options.runs > 0) {
    for (let i = 1; i < options.warmup; ++i) results = await session.run(feeds);
    const times = [];
    const cpuTimes = [];
    for (let i = 0; i < options.runs; ++i) {
      const cpuStart = process.cpuUsage();
      const start = process.hrtime.bigint();
      results = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      const cpu = process.cpuUsage(cpuStart);
      cpuTimes.push((cpu.user + cpu.system) / 1e3);
    }
    times.sort((a, b) => a - b);
    cpuTimes.sort((a, b) => a - b);
    console.log(JSON.stringify({ min_ms: times[0], median_ms: times[times.length >> 1],
                                 min_cpu_ms: cpuTimes[0], runs: times.length }));
  }
}

main().catch((e) => {
  console.error(`run_ort.js: ${e.message}`);
  process.exit(1);
});
