// Runs an ONNX model in ONNX Runtime (onnxruntime-node): the independent oracle of pt2onnx's tests.
//   node run.js MODEL.onnx IN_DIR OUT_DIR [--threads N]
//   node run.js --batch JOBS.json [--threads N]   (JOBS.json: [[model, in_dir, out_dir], ...]; one
//                                                  process for many models, errors per job in
//                                                  OUT_DIR/error.txt)
// IN_DIR/manifest.json maps input names to .npy files; OUT_DIR/manifest.json is written the same
// way for every tensor output (ONNX Runtime's Node binding cannot return sequences or optionals,
// which are left out). Exit status 1 with the error on stderr when ORT rejects the model or inputs.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array],
  '<u8': ['uint64', BigUint64Array], '<u4': ['uint32', Uint32Array], '<u2': ['uint16', Uint16Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', headerStart, headerStart + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: fortran order is not supported`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const entry = DTYPES[descr];
  if (!entry) throw new Error(`${file}: unsupported dtype ${descr}`);
  const [type, Arr] = entry;
  const dataStart = headerStart + headerLen;
  const bytes = buf.subarray(dataStart);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const data = new Arr(copy.buffer, 0, bytes.length / Arr.BYTES_PER_ELEMENT);
  return new ort.Tensor(type, type === 'bool' ? Uint8Array.from(data) : data, shape);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(DTYPES).find(k => DTYPES[k][0] === tensor.type);
  if (!descr) throw new Error(`output of unsupported type ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = tensor.type === 'bool' ? Buffer.from(Uint8Array.from(data, v => (v ? 1 : 0)))
                                      : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

async function runOne(model, inDir, outDir, threads) {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', logSeverityLevel: 3,
  });
  const manifest = JSON.parse(fs.readFileSync(path.join(inDir, 'manifest.json'), 'utf8'));
  const feeds = {};
  for (const [name, file] of Object.entries(manifest)) feeds[name] = readNpy(path.join(inDir, file));
  // onnxruntime-node returns tensors only ("Non tensor type is temporarily not supported"), so
  // sequence and optional outputs are not fetched: they are missing from the output manifest.
  const metadata = session.outputMetadata || [];
  const fetched = session.outputNames.filter((name, k) => !metadata[k] || metadata[k].isTensor !== false);
  const results = await session.run(feeds, fetched);
  fs.mkdirSync(outDir, { recursive: true });
  const outManifest = {};
  session.outputNames.forEach((name, k) => {
    if (!fetched.includes(name)) return;
    const file = `out_${k}.npy`;
    writeNpy(path.join(outDir, file), results[name]);
    outManifest[name] = file;
  });
  fs.writeFileSync(path.join(outDir, 'manifest.json'), JSON.stringify(outManifest));
}

async function main() {
  const args = process.argv.slice(2);
  const threadsAt = args.indexOf('--threads');
  const threads = threadsAt >= 0 ? Number(args.splice(threadsAt, 2)[1]) : 1;
  if (args[0] === '--batch' && args.length === 2) {
    const jobs = JSON.parse(fs.readFileSync(args[1], 'utf8'));
    for (const [model, inDir, outDir] of jobs) {
      try {
        await runOne(model, inDir, outDir, threads);
      } catch (e) {
        fs.mkdirSync(outDir, { recursive: true });
        fs.writeFileSync(path.join(outDir, 'error.txt'), `onnxruntime: ${e.message || e}`);
      }
    }
    return;
  }
  if (args.length !== 3) {
    console.error('usage: node run.js MODEL.onnx IN_DIR OUT_DIR [--threads N] | --batch JOBS.json');
    process.exit(2);
  }
  await runOne(args[0], args[1], args[2], threads);
}

if (require.main === module) {
  main().catch(e => {
    console.error(`onnxruntime: ${e.message || e}`);
    process.exit(1);
  });
}

module.exports = { ort, readNpy, writeNpy, runOne };
