// Reading and writing NumPy .npy files (format versions 1 to 3, little-endian, C order) as
// onnxruntime-node tensors.
'use strict';

const fs = require('fs');

// NumPy dtype descr -> [ONNX Runtime tensor type, typed array constructor].
const DTYPES = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<f2': ['float16', Uint16Array],
  '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array],
  '<i2': ['int16', Int16Array],
  '<u2': ['uint16', Uint16Array],
  '<i4': ['int32', Int32Array],
  '<u4': ['uint32', Uint32Array],
  '<i8': ['int64', BigInt64Array],
  '<u8': ['uint64', BigUint64Array],
  '|b1': ['bool', Uint8Array],
};
const DESCR_OF = Object.fromEntries(Object.entries(DTYPES).map(([descr, [type]]) => [type, descr]));

function readNpy(path) {
  const bytes = fs.readFileSync(path);
  if (bytes.length < 10 || bytes.toString('latin1', 0, 6) !== '\x93NUMPY') {
    throw new Error(`${path}: not a .npy file`);
  }
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = bytes.toString('latin1', headerStart, headerStart + headerLength);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${path}: unreadable header ${header}`);
  if (fortran[1] === 'True') throw new Error(`${path}: Fortran order is not supported`);
  const entry = DTYPES[descr[1]];
  if (!entry) throw new Error(`${path}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const dataStart = headerStart + headerLength;
  const count = dims.reduce((a, b) => a * b, 1);
  const [type, ArrayType] = entry;
  // Copy into a fresh, aligned buffer: the file's data offset need not be aligned for the type.
  const data = new ArrayType(count);
  new Uint8Array(data.buffer).set(bytes.subarray(dataStart, dataStart + data.byteLength));
  if (data.byteLength !== bytes.length - dataStart) {
    throw new Error(`${path}: expected ${data.byteLength} data bytes, found ${bytes.length - dataStart}`);
  }
  return { type, data: type === 'bool' ? new Uint8Array(data.buffer).map((v) => v !== 0) : data, dims };
}

function writeNpy(path, type, data, dims) {
  const descr = DESCR_OF[type];
  if (!descr) throw new Error(`cannot write tensor of type ${type} to ${path}`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Pad so that the data starts at a multiple of 64 bytes, ending the header with a newline.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const body = type === 'bool' ? Buffer.from(Uint8Array.from(data, (v) => (v ? 1 : 0)))
                               : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([prefix, Buffer.from(header, 'latin1'), body]));
}

module.exports = { readNpy, writeNpy };
