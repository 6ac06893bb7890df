"""What the quantization quality benchmark measures, shared by the machine that runs ONNX Runtime's
quantizers (ort_reference.py) and the one that runs qopt (run_quality.py), so both read the same
models, the same data and score with the same code.

Only numpy (and onnx for the weights) is used here: the two machines have different numpy and
onnx versions, so everything that must agree bit for bit (inputs, regenerated weights) is
elementwise float64 or integer arithmetic, which IEEE-754 and two's complement fix exactly.
"""
import gzip
import hashlib
import json
import os

import numpy as np

# Per model (models.json): what it is, its one input, how its uint8/int64 data becomes the
# model's input, and which task metric applies. 'source' says where the model comes from: the
# trained corpus (tests/corpus, fetched by fetch_corpus.py) or a device export with regenerated
# weights (bench/quality/models).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "models.json")) as _f:
    MODELS = json.load(_f)

TASK_METRIC = {
    "classifier": "top-1 agreement with FP32 (%)",
    "lm": "next-token top-1 agreement with FP32 over all positions (%)",
    "recognizer": "CTC greedy sequences equal to FP32's (%)",
    "detector": "IoU of prob map > 0.3 with FP32's (%)",
}

DET_THRESHOLD = 0.3  # DBNet post-processing's binarization threshold (PaddleOCR det_db_thresh)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def data_file(data_dir, model, split):
    return os.path.join(data_dir, model, f"{split}.npy")


def load_split(data_dir, model, split):
    """The stored samples of one split: uint8 [N, C, H, W] images or int64 [N, 1, L] token ids."""
    return np.load(data_file(data_dir, model, split))


def model_input(model, raw):
    """One stored sample (uint8 image or int64 ids) as the model's input, with the batch axis.
    Float64 arithmetic, rounded once to float32, so both machines produce the same bits."""
    spec = MODELS[model]
    if spec["norm"] == "ids":
        return np.ascontiguousarray(raw.reshape(spec["shape"]).astype(np.int64))
    x = raw.astype(np.float64) / 255.0
    if spec["norm"] == "imagenet":  # PaddleOCR det and timm: (x/255 - mean) / std per channel
        mean = np.array(IMAGENET_MEAN, dtype=np.float64).reshape(3, 1, 1)
        std = np.array(IMAGENET_STD, dtype=np.float64).reshape(3, 1, 1)
        x = (x - mean) / std
    elif spec["norm"] == "half":  # PaddleOCR rec and cls: (x/255 - 0.5) / 0.5
        x = (x - 0.5) / 0.5
    else:
        raise ValueError(f"{model}: unknown normalization {spec['norm']!r}")
    return np.ascontiguousarray(x.reshape(spec["shape"]).astype(np.float32))


# ---------------------------------------------------------------------------------------------
# Metrics. Each takes the FP32 outputs and a method's outputs (lists of arrays, one per sample, of
# the model's first output) and returns a number; all sums in float64.


def sqnr_db(reference, actual):
    """10 log10(signal / noise) over every element of every sample."""
    signal = sum(float(np.sum(np.square(e.astype(np.float64)))) for e in reference)
    noise = sum(float(np.sum(np.square(a.astype(np.float64) - e.astype(np.float64))))
                for e, a in zip(reference, actual))
    if noise == 0.0:
        return float("inf")
    return float(10.0 * np.log10(max(signal, 1e-300) / noise))


def cosine(reference, actual):
    """Mean over samples of the cosine between the flattened outputs."""
    values = []
    for e, a in zip(reference, actual):
        e64 = e.astype(np.float64).ravel()
        a64 = a.astype(np.float64).ravel()
        denom = np.linalg.norm(e64) * np.linalg.norm(a64)
        values.append(1.0 if denom == 0.0 and np.array_equal(e64, a64) else
                      (float(np.dot(e64, a64) / denom) if denom > 0 else 0.0))
    return float(np.mean(values))


def ctc_greedy(probs):
    """PaddleOCR's CTC greedy decoding: argmax per time step, repeats merged, blank (0) dropped."""
    best = np.argmax(probs.reshape(probs.shape[-2], probs.shape[-1]), axis=-1)
    keep = np.ones(best.shape, dtype=bool)
    keep[1:] = best[1:] != best[:-1]
    return [int(c) for c in best[keep] if c != 0]


def labels(task, output):
    """What the task reads off one sample's output: class, token per position, label sequence,
    or the binarized map."""
    if task == "classifier":
        return [int(np.argmax(output.reshape(-1)))]
    if task == "lm":
        return [int(t) for t in np.argmax(output.reshape(-1, output.shape[-1]), axis=-1)]
    if task == "recognizer":
        return ctc_greedy(output)
    if task == "detector":
        return output.reshape(-1) > DET_THRESHOLD
    raise ValueError(f"unknown task {task!r}")


def task_metric(task, reference, actual):
    """The task's agreement of a method with FP32, in percent."""
    if task == "detector":
        inter = union = 0
        for e, a in zip(reference, actual):
            me, ma = labels(task, e), labels(task, a)
            inter += int(np.count_nonzero(me & ma))
            union += int(np.count_nonzero(me | ma))
        return 100.0 if union == 0 else 100.0 * inter / union
    if task == "lm":
        same = total = 0
        for e, a in zip(reference, actual):
            le, la = labels(task, e), labels(task, a)
            same += sum(int(x == y) for x, y in zip(le, la))
            total += len(le)
        return 100.0 * same / total
    same = sum(int(labels(task, e) == labels(task, a)) for e, a in zip(reference, actual))
    return 100.0 * same / len(reference)


CLEAR_MARGIN = 0.1  # FP32's top-1 minus top-2 probability at a decision it takes clearly


def decision_margins(task, output):
    """FP32's top-1 minus top-2 probability at each decision the task reads off one sample's
    output (per class, time step or position), or None for tasks without one (the detector's map).
    An output that is not already a probability distribution along its last axis goes through a
    softmax first."""
    if task not in ("classifier", "lm", "recognizer"):
        return None
    rows = output.astype(np.float64).reshape(-1, output.shape[-1])
    if not (np.all(rows >= 0) and np.allclose(rows.sum(axis=-1), 1.0, atol=1e-3)):
        rows = np.exp(rows - rows.max(axis=-1, keepdims=True))
        rows /= rows.sum(axis=-1, keepdims=True)
    top2 = np.sort(rows, axis=-1)[:, -2:]
    return top2[:, 1] - top2[:, 0]


def clear_agreement(task, reference, actual, margin=CLEAR_MARGIN):
    """The task agreement restricted to what FP32 decides clearly (every decision of a sample, or
    for the language model each position, at a top-2 probability margin of at least `margin`):
    (percent or None, decisions counted, decisions in all). A flip where FP32 itself is at a near
    tie says little about the quantization; a flip where it is clear says a lot."""
    counted = total = same = 0
    for e, a in zip(reference, actual):
        m = decision_margins(task, e)
        if m is None:
            return None, 0, 0
        if task == "lm":
            le, la = labels(task, e), labels(task, a)
            clear = m >= margin
            total += len(le)
            counted += int(np.count_nonzero(clear))
            same += sum(int(x == y) for x, y, c in zip(le, la, clear) if c)
            continue
        total += 1
        if np.all(m >= margin):
            counted += 1
            same += int(labels(task, e) == labels(task, a))
    return (100.0 * same / counted if counted else None), counted, total


def score(model, reference, actual, reference_pre=None, actual_pre=None):
    """The metrics of one method; with the pre-activation outputs of both (see
    with_preactivation_output), also the SQNR there."""
    task = MODELS[model]["task"]
    result = {"sqnr_db": sqnr_db(reference, actual), "cosine": cosine(reference, actual),
              "task": task_metric(task, reference, actual)}
    clear, counted, total = clear_agreement(task, reference, actual)
    if total:
        result["task_clear"] = clear
        result["clear_decisions"] = [counted, total]
    if reference_pre is not None and actual_pre is not None:
        # Flattened: an opset conversion may compute the Softmax on a 2-D view.
        result["pre_sqnr_db"] = sqnr_db([e.ravel() for e in reference_pre],
                                        [a.ravel() for a in actual_pre])
    return result


def compared_sqnr(a, b):
    """The SQNR two rows are compared on: at the pre-activation (logits) when both have it, else
    at the output. A Softmax or Sigmoid output saturates: a confident sample's probabilities stay
    within 1e-7 of FP32's whatever its logits do, so the output SQNR over a set of samples is
    that of its least confident one or two (on the direction classifier, one sample of 64 moves
    it by 20 dB)."""
    if a.get("pre_sqnr_db") is not None and b.get("pre_sqnr_db") is not None:
        return a["pre_sqnr_db"], b["pre_sqnr_db"], "pre-activation"
    return a["sqnr_db"], b["sqnr_db"], "output"


PRE_ACTIVATION_OPS = ("Softmax", "LogSoftmax", "Sigmoid")


VIEW_OPS = ("QuantizeLinear", "DequantizeLinear", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
            "Identity")


def preactivation_node(graph):
    """The Softmax, LogSoftmax or Sigmoid that computes the graph's first output (seen through
    QuantizeLinear/DequantizeLinear and reshapes after it, as an opset conversion writes a
    Softmax of opset < 13 on a 2-D view), or None."""
    producer = {o: n for n in graph.node for o in n.output}
    node = producer.get(graph.output[0].name)
    while node is not None and node.op_type in VIEW_OPS:
        node = producer.get(node.input[0])
    return node if node is not None and node.op_type in PRE_ACTIVATION_OPS else None


def preactivation_of(graph):
    """The input of preactivation_node(graph), the logits, or None."""
    node = preactivation_node(graph)
    return node.input[0] if node is not None else None


def with_preactivation_output(src, dst):
    """Writes to dst a copy of the model at src that also outputs its pre-activation (second
    output) and returns that tensor's name; None, writing nothing, when the model has none."""
    import onnx

    model = onnx.load(src)
    pre = preactivation_of(model.graph)
    if pre is None:
        return None
    elem = model.graph.output[0].type.tensor_type.elem_type
    model.graph.output.append(onnx.helper.make_tensor_value_info(pre, elem, None))
    onnx.save(model, dst)
    return pre


def fp32_digest(model, reference):
    """Per evaluation sample: the output's sum and sum of squares (float64) and what the task reads
    off it, so the other machine can check that its FP32 outputs are the same."""
    task = MODELS[model]["task"]
    out = []
    for e in reference:
        e64 = e.astype(np.float64)
        lab = labels(task, e)
        out.append({"sum": float(np.sum(e64)), "sumsq": float(np.sum(e64 * e64)),
                    "labels": int(np.count_nonzero(lab)) if task == "detector" else lab})
    return out


def compare_digests(model, ours, theirs):
    """Largest relative difference of the sums and sums of squares, and the share of samples whose
    task labels are equal."""
    worst = 0.0
    same = 0
    for a, b in zip(ours, theirs):
        for key in ("sum", "sumsq"):
            scale = max(abs(a[key]), abs(b[key]), 1e-30)
            worst = max(worst, abs(a[key] - b[key]) / scale)
        same += int(a["labels"] == b["labels"])
    return {"max_rel_diff": worst, "labels_equal": same, "samples": len(ours)}


# ---------------------------------------------------------------------------------------------
# Regenerated weights. A float initializer of a device export is stored as its mean and standard
# deviation only; its values are rebuilt from a counter-based hash of (initializer name, index),
# so the model is the same, bit for bit, wherever it is rebuilt.

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
_SQRT3 = 1.7320508075688772  # float64 nearest to sqrt(3), written out: no library call
_CHUNK = 1 << 22


def _splitmix64(state):
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _name_seed(name):
    return np.uint64(int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little"))


def regenerated_values(name, count, mean, std):
    """float32[count]: mean + std * z, z a sum of four uniforms (Irwin-Hall, bell-shaped) scaled to
    unit variance; two splitmix64 draws per element give the four 32-bit uniforms."""
    seed = _name_seed(name)
    out = np.empty(count, dtype=np.float32)
    with np.errstate(over="ignore"):
        for start in range(0, count, _CHUNK):
            stop = min(count, start + _CHUNK)
            k = np.arange(start, stop, dtype=np.uint64) * np.uint64(2)
            ha = _splitmix64(seed + (k + np.uint64(1)) * _GOLDEN)
            hb = _splitmix64(seed + (k + np.uint64(2)) * _GOLDEN)
            u = ((ha >> np.uint64(32)).astype(np.float64) + (ha & _LOW32).astype(np.float64)
                 + (hb >> np.uint64(32)).astype(np.float64) + (hb & _LOW32).astype(np.float64))
            z = (u * (1.0 / 4294967296.0) - 2.0) * _SQRT3
            out[start:stop] = (mean + std * z).astype(np.float32)
    return out


def load_spec(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rebuild_model(skeleton_gz, spec):
    """The full model's bytes: the skeleton (an ONNX model whose regenerated initializers carry no
    data) with each listed initializer filled from regenerated_values."""
    import onnx

    with gzip.open(skeleton_gz, "rb") as f:
        model = onnx.ModelProto()
        model.ParseFromString(f.read())
    filled = 0
    for tensor in model.graph.initializer:
        entry = spec["initializers"].get(tensor.name)
        if entry is None:
            continue
        if tensor.data_type != onnx.TensorProto.FLOAT:
            raise ValueError(f"{skeleton_gz}: initializer {tensor.name} is not float32")
        count = int(np.prod(tensor.dims, dtype=np.int64)) if len(tensor.dims) else 1
        values = regenerated_values(tensor.name, count, entry["mean"], entry["std"])
        tensor.raw_data = values.astype("<f4").tobytes()
        filled += 1
    if filled != len(spec["initializers"]):
        raise ValueError(f"{skeleton_gz}: {len(spec['initializers']) - filled} initializers of "
                         "the spec are missing from the skeleton")
    return model.SerializeToString()
