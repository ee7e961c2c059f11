// ONNX latency of exported models with onnxruntime-node on the CPU, batch 1 (issue 31's before/after):
//   NODE_PATH=.deps/onnxruntime/node_modules node bench/onnx_latency.js [--runs N] [--threads T] MODEL.onnx...
// Per model: 5 untimed runs, then N (default 50) timed runs of one zero image at the model's input size;
// prints the median and the 10th/90th percentiles in ms, one JSON line per model.
const ort = require('onnxruntime-node');

async function latency(path, runs, threads) {
  const options = { executionProviders: ['cpu'] };
  if (threads > 0) options.intraOpNumThreads = threads;
  const session = await ort.InferenceSession.create(path, options);
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  const half = meta && meta.type === 'float16';
  const dims = meta && meta.shape && meta.shape.every((d) => typeof d === 'number') ? meta.shape : [1, 3, 640, 640];
  const count = dims.reduce((a, b) => a * b, 1);
  const input = half ? new ort.Tensor('float16', new Uint16Array(count), dims) : new ort.Tensor('float32', new Float32Array(count), dims);
  const feeds = { [session.inputNames[0]]: input };
  for (let i = 0; i < 5; i++) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const q = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))];
  return { model: path, input: dims, runs, median_ms: q(0.5), p10_ms: q(0.1), p90_ms: q(0.9) };
}

async function main() {
  const args = process.argv.slice(2);
  let runs = 50, threads = 0;
  const models = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--runs') runs = Number(args[++i]);
    else if (args[i] === '--threads') threads = Number(args[++i]);
    else models.push(args[i]);
  }
  if (!models.length || !(runs > 0)) throw new Error('usage: [--runs N] [--threads T] MODEL.onnx...');
  for (const m of models) console.log(JSON.stringify(await latency(m, runs, threads)));
}

main().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
