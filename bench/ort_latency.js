// ONNX Runtime latency of one model, for bench/bench_runtime.py.
//
//   node bench/ort_latency.js MODEL.onnx INPUTS.json [--warmup W] [--iterations N] [--threads T]
//                             [--output OUT_DIR] [--profile PREFIX] [--serve]
//
// INPUTS.json maps input names to .npy files (paths relative to the JSON file). The session is
// created once (intraOpNumThreads=T (default 1), interOpNumThreads=1, sequential execution,
// graphOptimizationLevel 'all'); then W warm-up runs and N timed runs, each timed with
// process.hrtime.bigint() around `await session.run(feeds)` (the input tensors are created once,
// before timing). Prints one JSON line: {"session_ms", "warmup", "threads", "times_ms": [...],
// "cpu_ms": [...] (process CPU time of each timed run, process.cpuUsage), "outputs"}.
// --output writes the last run's outputs as OUT_DIR/<k>.npy with OUT_DIR/manifest.json
// ({name: file}). --profile turns on ORT's profiler (a JSON trace written at PREFIX*).
//
// --serve: after the session and warm-up, reads commands from stdin, one per line:
//   "run N"   -> N timed runs, prints {"times_ms": [...], "cpu_ms": [...]}
//   "quit"    -> exits
// so that the caller can interleave blocks of ORT runs with its own measurements.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
// The npy helpers and onnxruntime-node come from the project's ONNX Runtime runner (tools/ort).
const { ort, readNpy, writeNpy } = require(path.join(__dirname, '..', 'tools', 'ort', 'run.js'));

function option(args, name, fallback) {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
}

async function timed(session, feeds, n) {
  const times = [];
  const cpu = [];
  let results = null;
  for (let i = 0; i < n; ++i) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    const t1 = process.hrtime.bigint();
    const c = process.cpuUsage(c0);
    times.push(Number(t1 - t0) / 1e6);
    cpu.push((c.user + c.system) / 1000);
  }
  return [times, results, cpu];
}

async function main() {
  const args = process.argv.slice(2);
  const warmup = Number(option(args, '--warmup', '5'));
  const iterations = Number(option(args, '--iterations', '20'));
  const threads = Number(option(args, '--threads', '1'));
  const outDir = option(args, '--output', null);
  const profile = option(args, '--profile', null);
  const serveAt = args.indexOf('--serve');
  const serve = serveAt >= 0;
  if (serve) args.splice(serveAt, 1);
  if (args.length !== 2) {
    console.error('usage: node ort_latency.js MODEL.onnx INPUTS.json [--warmup W] [--iterations N] [--threads T] ' +
                  '[--output DIR] [--profile PREFIX] [--serve]');
    process.exit(2);
  }
  const [model, inputsJson] = args;
  const options = {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', logSeverityLevel: 3,
  };
  if (profile) {
    options.enableProfiling = true;
    options.profileFilePrefix = profile;
  }
  const s0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, options);
  const sessionMs = Number(process.hrtime.bigint() - s0) / 1e6;
  const manifest = JSON.parse(fs.readFileSync(inputsJson, 'utf8'));
  const feeds = {};
  for (const [name, file] of Object.entries(manifest)) feeds[name] = readNpy(path.resolve(path.dirname(inputsJson), file));

  const [, warmResults] = await timed(session, feeds, warmup);
  let [times, results, cpu] = await timed(session, feeds, iterations);
  results = results || warmResults || await session.run(feeds);
  if (outDir) {
    fs.mkdirSync(outDir, { recursive: true });
    const outManifest = {};
    session.outputNames.forEach((name, k) => {
      writeNpy(path.join(outDir, `${k}.npy`), results[name]);
      outManifest[name] = `${k}.npy`;
    });
    fs.writeFileSync(path.join(outDir, 'manifest.json'), JSON.stringify(outManifest));
  }
  const report = { session_ms: sessionMs, warmup, threads, times_ms: times, cpu_ms: cpu, outputs: session.outputNames };
  if (!serve) {
    if (profile) report.profile = session.endProfiling();
    console.log(JSON.stringify(report));
    return;
  }
  console.log(JSON.stringify(report));
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    const [cmd, arg] = line.trim().split(/\s+/);
    if (cmd === 'quit') break;
    if (cmd === 'run') {
      const [blockTimes, , blockCpu] = await timed(session, feeds, Number(arg));
      console.log(JSON.stringify({ times_ms: blockTimes, cpu_ms: blockCpu }));
    } else {
      console.log(JSON.stringify({ error: `unknown command '${line.trim()}'` }));
    }
  }
  if (profile) console.log(JSON.stringify({ profile: session.endProfiling() }));
  rl.close();
}

main().catch(e => {
  console.error(`onnxruntime: ${e.message || e}`);
  process.exit(1);
});
