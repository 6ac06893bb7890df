// runDriver answers DriverOptions::help with printHelp, which the command defines over its gflags
// flags. The module has no command line: its help is what qopt.run takes, and qopt.run's
// docstring is this text (qopt._qopt.help runs runDriver with help set).
#include <ostream>

#include "CommandLine.h"

namespace qopt {

void printHelp(std::ostream& out) {
  out << "Runs a pipeline of passes over a model, as the qopt command does.\n"
         "\n"
         "run(model, pipeline, *, calib=None, eval=None, preprocess=None, target=None,\n"
         "    input_shapes=None, input_values=None, threads=0, max_memory=None, seed=0,\n"
         "    plugins=(), verbose=False)\n"
         "\n"
         "model: a file name (binary ONNX or ONNX text), the bytes of a binary model or an\n"
         "    onnx.ModelProto.\n"
         "pipeline: the pipeline text (the command's -p: 'fold-bn,insert-qdq{calibrator=max}'),\n"
         "    or the name of an existing .qp file (--pipeline-file). '' runs no pass.\n"
         "calib, eval: --calib-data and --eval-data: a file or folder name, an iterable of\n"
         "    {input name: numpy array} samples, or an object with get_next() returning such a\n"
         "    dict or None (ONNX Runtime's CalibrationDataReader). Samples are written one at a\n"
         "    time to a temporary folder, removed after the run.\n"
         "preprocess: --preprocess, how image (PNG, JPEG) and audio (WAV, FLAC) files among the\n"
         "    calib and eval data become model inputs: space-separated key=value words, e.g.\n"
         "    'resize=160x160 keep-aspect=pad scale=1/255 mean=0.485,0.456,0.406\n"
         "    std=0.229,0.224,0.225 channels=rgb layout=nchw'; audio 'rate=16000 frames=512'.\n"
         "    A bad spec raises qopt.UsageError. Samples given as arrays need none.\n"
         "target: --target ('tensorrt', 'tensorrt-8.6', 'ort', 'generic'; default tensorrt).\n"
         "input_shapes: --input-shapes, as its text or a {name: shape} dict.\n"
         "input_values: --input-values, as its text or a {name: number or list} dict.\n"
         "threads, max_memory, seed: --threads (0: every core), --max-memory ('8G' or bytes),\n"
         "    --seed.\n"
         "plugins: --load-pass-plugin files, loaded after the built-in passes and\n"
         "    QOPT_PLUGIN_PATH.\n"
         "verbose: -v (notes and per-node remarks in the log).\n"
         "\n"
         "Returns a Result: .model (the output model's bytes), .report (the --report JSON as a\n"
         "dict), .log (what the command prints to stderr), .model_proto() (needs onnx).\n"
         "Raises qopt.UsageError for what the command exits 2 on (usage and input errors) and\n"
         "qopt.VerificationError for what it exits 1 on (a check failed), which still carries\n"
         ".model and .report, as the command still writes them.\n"
         "\n"
         "The run holds no GIL; Ctrl-C stops it before the next pass or sample and raises\n"
         "KeyboardInterrupt, with no model returned.\n";
}

}  // namespace qopt
