"""LSTM, GRU and RNN nodes covering what the ONNX spec lets them do: forward, reverse and
bidirectional; layout 0 and 1 (opset 14); sequence_lens with unequal lengths (one of them 0 for
LSTM and GRU); initial states fed as graph inputs; LSTM peepholes and input_forget; GRU
linear_before_reset 0 and 1; non-default activations with their alpha/beta; clip small enough to
bite; B omitted; each of Y, Y_h and Y_c present or omitted. Each node has its own graph outputs
(named after its case).

ONNX Runtime's CPU kernels do not run layout 1 (LSTM and GRU refuse it, RNN ignores it), so each
builder also returns a reference model for ONNX Runtime: the same graph with every layout-1 node
replaced by the spec's equivalent, Transposes around a layout-0 node. Every alpha and beta is
given explicitly, as ONNX Runtime's defaults for some activations (Affine, ThresholdedRelu,
ScaledTanh) differ from those of the ONNX operators the spec names."""

import numpy as np
from onnx import TensorProto, helper

import modelkit

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}

# Per op, one dict per node: its name, the spec's attributes (alpha and beta stand for
# activation_alpha and activation_beta) and which optional inputs and outputs it has.
CASES = {
    "LSTM": [
        dict(name="lstm_forward_defaults", direction="forward", bias=True),
        dict(name="lstm_reverse_lengths_peepholes", direction="reverse", lengths=[5, 2, 4],
             initial=True, peepholes=True, bias=True),
        dict(name="lstm_bidirectional_batchwise_clip", direction="bidirectional", layout=1,
             lengths=[3, 5, 1], initial=True, peepholes=True, bias=True, clip=0.9),
        dict(name="lstm_bidirectional_activations", direction="bidirectional", bias=True,
             activations=["HardSigmoid", "LeakyRelu", "Softsign", "Sigmoid", "ScaledTanh", "Affine"],
             alpha=[0.3, 0.2, 0.8, 0.7], beta=[0.45, 1.3, 0.1], outputs=("", "Y_h", "Y_c")),
        dict(name="lstm_input_forget_empty_entry", direction="forward", input_forget=1,
             lengths=[5, 0, 3], initial=True, activations=["Sigmoid", "Elu", "Softplus"],
             alpha=[0.6], outputs=("Y", "", "Y_c")),
        dict(name="lstm_batchwise_relu", direction="forward", layout=1, bias=True,
             activations=["Sigmoid", "Relu", "ThresholdedRelu"], alpha=[0.1],
             outputs=("Y", "Y_h")),
    ],
    "GRU": [
        dict(name="gru_forward_defaults", direction="forward", bias=True),
        dict(name="gru_reverse_linear_before_reset", direction="reverse", linear_before_reset=1,
             lengths=[5, 2, 4], initial=True, bias=True),
        dict(name="gru_bidirectional_batchwise_clip", direction="bidirectional", layout=1,
             lengths=[3, 5, 1], initial=True, bias=True, clip=0.8),
        dict(name="gru_bidirectional_activations", direction="bidirectional",
             linear_before_reset=1, lengths=[5, 0, 3], initial=True, bias=True,
             activations=["HardSigmoid", "Softsign", "Sigmoid", "Elu"], alpha=[0.25, 0.5],
             beta=[0.55], outputs=("", "Y_h")),
        dict(name="gru_batchwise_no_bias", direction="forward", layout=1, linear_before_reset=1,
             initial=True, activations=["Sigmoid", "ScaledTanh"], alpha=[1.5], beta=[0.7],
             outputs=("Y",)),
    ],
    "RNN": [
        dict(name="rnn_forward_defaults", direction="forward", bias=True),
        dict(name="rnn_reverse_lengths_relu", direction="reverse", lengths=[5, 2, 4],
             initial=True, bias=True, activations=["Relu"]),
        dict(name="rnn_bidirectional_batchwise_clip", direction="bidirectional", layout=1,
             lengths=[3, 5, 1], initial=True, bias=True, clip=1.5,
             activations=["Affine", "ScaledTanh"], alpha=[0.8, 1.2], beta=[0.1, 0.6]),
        dict(name="rnn_batchwise_leaky", direction="forward", layout=1, initial=True,
             activations=["LeakyRelu"], alpha=[0.3], outputs=("", "Y_h")),
    ],
}

# Opset 7's ops (no layout attribute): one node of each, bidirectional or with lengths.
OPSET7_CASES = [
    dict(op="LSTM", name="lstm7", direction="bidirectional", lengths=[4, 5, 2], initial=True,
         peepholes=True, bias=True),
    dict(op="GRU", name="gru7", direction="forward", lengths=[4, 5, 2], initial=True, bias=True),
    dict(op="RNN", name="rnn7", direction="bidirectional", initial=True, bias=True),
]


class _Case:
    """One node's parameters, drawn from a seed of its own so that the model and its reference
    hold the same values."""

    def __init__(self, op, spec, seed):
        self.op = op
        self.spec = spec
        self.name = spec["name"]
        self.layout = spec.get("layout", 0)
        self.dirs = 2 if spec["direction"] == "bidirectional" else 1
        rng = np.random.default_rng(seed)
        rows = GATES[op] * HIDDEN

        def uniform(shape, bound):
            return rng.uniform(-bound, bound, shape).astype(np.float32)

        self.w = uniform((self.dirs, rows, INPUT), 1 / np.sqrt(INPUT))
        self.r = uniform((self.dirs, rows, HIDDEN), 1 / np.sqrt(HIDDEN))
        self.b = uniform((self.dirs, 2 * rows), 0.5) if spec.get("bias") else None
        self.p = uniform((self.dirs, 3 * HIDDEN), 0.5) if spec.get("peepholes") else None
        self.lengths = np.array(spec["lengths"], np.int32) if "lengths" in spec else None
        state = (self.dirs, BATCH, HIDDEN)
        self.h0 = rng.normal(0, 0.5, state).astype(np.float32) if spec.get("initial") else None
        self.c0 = (rng.normal(0, 0.5, state).astype(np.float32)
                   if spec.get("initial") and op == "LSTM" else None)
        self.x = rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
        self.outputs = spec.get("outputs", ("Y", "Y_h", "Y_c") if op == "LSTM" else ("Y", "Y_h"))

    def attrs(self, layout):
        a = dict(hidden_size=HIDDEN, direction=self.spec["direction"])
        for key in ("activations", "clip", "linear_before_reset", "input_forget"):
            if key in self.spec:
                a[key] = self.spec[key]
        if "alpha" in self.spec:
            a["activation_alpha"] = self.spec["alpha"]
        if "beta" in self.spec:
            a["activation_beta"] = self.spec["beta"]
        if layout:
            a["layout"] = layout
        return a

    def feeds(self):
        """Graph inputs, in the node's layout: X and the initial states."""
        batch_first = self.layout == 1
        f = {f"{self.name}_X": self.x.transpose(1, 0, 2) if batch_first else self.x}
        for key, value in (("initial_h", self.h0), ("initial_c", self.c0)):
            if value is not None:
                f[f"{self.name}_{key}"] = value.transpose(1, 0, 2) if batch_first else value
        return {k: np.ascontiguousarray(v) for k, v in f.items()}


def _add_node(b, case, inputs, outputs, reference):
    """Adds the case's node to builder b; `reference`: a layout-1 node as Transposes around a
    layout-0 node."""
    name = case.name
    feeds = case.feeds()
    for feed, array in feeds.items():
        inputs.append(helper.make_tensor_value_info(feed, TensorProto.FLOAT, list(array.shape)))
    transpose = reference and case.layout == 1

    def state(key):
        feed = f"{name}_{key}"
        if feed not in feeds:
            return ""
        return b.node("Transpose", [feed], perm=[1, 0, 2]) if transpose else feed

    x = b.node("Transpose", [f"{name}_X"], perm=[1, 0, 2]) if transpose else f"{name}_X"
    node_inputs = [
        x, b.const(f"{name}_W", case.w), b.const(f"{name}_R", case.r),
        b.const(f"{name}_B", case.b) if case.b is not None else "",
        b.const(f"{name}_lengths", case.lengths) if case.lengths is not None else "",
        state("initial_h"),
    ]
    if case.op == "LSTM":
        node_inputs += [state("initial_c"), b.const(f"{name}_P", case.p) if case.p is not None else ""]
    while node_inputs[-1] == "":
        node_inputs.pop()
    graph_outputs = [f"{name}_{o}" if o else "" for o in case.outputs]
    node_outputs = [f"{o}_raw" if (o and transpose) else o for o in graph_outputs]
    b.node(case.op, node_inputs, outputs=node_outputs,
           **case.attrs(0 if transpose else case.layout))
    for raw, out in zip(node_outputs, graph_outputs):
        if not out:
            continue
        if transpose:  # Y to [batch, seq, dirs, hidden], Y_h and Y_c to [batch, dirs, hidden]
            perm = [2, 0, 1, 3] if out.endswith("_Y") else [1, 0, 2]
            b.node("Transpose", [raw], outputs=[out], perm=perm)
        outputs.append(modelkit.output(out))


def _build(cases, opset, graph_name, seed):
    models = []
    for reference in (False, True):
        b = modelkit.GraphBuilder(seed)
        inputs, outputs = [], []
        for i, (op, spec) in enumerate(cases):
            _add_node(b, _Case(op, spec, seed + i), inputs, outputs, reference)
        models.append(b.model(graph_name, inputs, outputs, opset=opset))
    feeds = {}
    for i, (op, spec) in enumerate(cases):
        feeds.update(_Case(op, spec, seed + i).feeds())
    return models[0], feeds, models[1]


def build(op, seed=0):
    """Every case of `op` in one opset-14 model: (model, inputs, reference for ONNX Runtime)."""
    return _build([(op, spec) for spec in CASES[op]], 14, op.lower() + "_cases", seed)


def build_opset7(seed=0):
    """One node of each op at opset 7."""
    return _build([(spec["op"], spec) for spec in OPSET7_CASES], 7, "recurrent_opset7", seed)
