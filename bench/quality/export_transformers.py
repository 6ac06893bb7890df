#!/usr/bin/env python3
"""Exports the benchmark's two transformers with PyTorch (on a machine with torch, timm and
transformers) and writes what the repository keeps of them: the graph without its weights.

  vit-b16  timm vit_base_patch16_224, random init, attention written out (no fused kernel),
           input pixel_values [1,3,224,224], output logits [1,1000]
  gpt2     transformers GPT2LMHeadModel(GPT2Config: 12 layers, 768 wide, 12 heads, 50257 ids),
           random init, eager attention, no cache, input input_ids int64 [1,128], output logits.
           GPT-2's Conv1D layers (torch.addmm on a flattened input, exported as Gemm) are replaced
           by the same product on the 3-D input (exported as MatMul + Add), the form weight-only
           4-bit quantizers look for.

Every float initializer that looks like a trained weight (float32, at least 1024 elements, finite,
more than 16 distinct values among its first 4096) is replaced by regenerated values with its
mean and standard deviation (quality_common.regenerated_values); the rest (LayerNorm's ones and
zeros, masks, scalars) stays as exported. Written to --out:

  <name>.skeleton.onnx.gz   the model with the regenerated initializers' data left out
  transformers.spec.json    per model: each regenerated initializer's mean and std, and the
                            SHA-256 of the rebuilt model (rebuild_models.py checks it)

and the rebuilt models themselves to --models (too large for the repository).
"""
import argparse
import gzip
import io
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import quality_common as qc  # noqa: E402

MIN_ELEMENTS = 1024


def vit_module():
    import timm
    import torch

    try:
        from timm.layers import set_fused_attn
        set_fused_attn(False)  # explicit q @ k^T, softmax, @ v: what a deployed export holds
    except ImportError:
        pass
    torch.manual_seed(0)
    model = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=1000).eval()
    # A zero-initialized head would make every logit equal; give it a weight's spread.
    torch.nn.init.trunc_normal_(model.head.weight, std=0.02)
    return model, (torch.zeros(1, 3, 224, 224),), ["pixel_values"]


class MatMulConv1D:
    """Factory for a module computing GPT-2's Conv1D (x @ W + b, W [in, out]) on the 3-D input."""

    @staticmethod
    def make(conv):
        import torch

        class Linear3D(torch.nn.Module):
            def __init__(self, weight, bias):
                super().__init__()
                self.weight = torch.nn.Parameter(weight.detach().clone())
                self.bias = torch.nn.Parameter(bias.detach().clone())

            def forward(self, x):
                return torch.matmul(x, self.weight) + self.bias

        return Linear3D(conv.weight, conv.bias)


def gpt2_module():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.pytorch_utils import Conv1D

    config = GPT2Config(n_layer=12, n_embd=768, n_head=12, n_positions=1024, vocab_size=50257,
                        use_cache=False)
    torch.manual_seed(0)
    try:
        model = GPT2LMHeadModel._from_config(config, attn_implementation="eager")
    except (TypeError, AttributeError):
        config._attn_implementation = "eager"
        model = GPT2LMHeadModel(config)
    model.eval()
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, Conv1D):
                setattr(parent, name, MatMulConv1D.make(child))

    class LogitsOnly(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids, use_cache=False, return_dict=False)[0]

    return LogitsOnly(model).eval(), (torch.zeros(1, 128, dtype=torch.int64),), ["input_ids"]


def export(module, args, input_names, path):
    """TorchScript exporter at opset 17 when this torch still has it, else torch.export's."""
    import torch

    errors = []
    for dynamo, opset in ((False, 17), (True, 18)):
        try:
            with torch.no_grad():
                torch.onnx.export(module, args, path, input_names=input_names,
                                  output_names=["logits"], opset_version=opset, dynamo=dynamo,
                                  do_constant_folding=True)
            return f"torch {torch.__version__} {'torch.export' if dynamo else 'TorchScript'} exporter, opset {opset}"
        except Exception as e:  # the next exporter may manage what this one cannot
            errors.append(f"dynamo={dynamo}: {type(e).__name__}: {str(e)[:400]}")
    raise RuntimeError("; ".join(errors))


def strip_new_fields(message):
    """Drops metadata_props (ONNX >= 1.16) everywhere, so older onnx/protobuf versions, for which
    they are unknown fields and serialize last, write the same bytes as this one."""
    from google.protobuf.message import Message

    for field, value in message.ListFields():
        if field.name == "metadata_props" and message.DESCRIPTOR.name != "ModelProto":
            message.ClearField("metadata_props")
        elif field.type == field.TYPE_MESSAGE:
            repeated = getattr(field, "is_repeated", None)
            if repeated is None:
                repeated = field.label == field.LABEL_REPEATED
            if repeated:
                for item in value:
                    strip_new_fields(item)
            elif isinstance(value, Message):
                strip_new_fields(value)


def skeletonize(path):
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path, load_external_data=True)
    strip_new_fields(model)
    spec = {}
    for t in model.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT:
            continue
        a = numpy_helper.to_array(t)
        if a.size < MIN_ELEMENTS or not np.all(np.isfinite(a)):
            continue
        if len(np.unique(a.ravel()[:4096])) <= 16:
            continue
        a64 = a.astype(np.float64)
        spec[t.name] = {"shape": list(a.shape), "mean": float(a64.mean()), "std": float(a64.std())}
        for field in ("raw_data", "float_data", "external_data"):
            t.ClearField(field)
        t.data_location = onnx.TensorProto.DEFAULT
    return model, spec


def op_counts(model):
    counts = {}
    for n in model.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return dict(sorted(counts.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for skeletons and the spec")
    parser.add_argument("--models", required=True, help="folder for the rebuilt full models")
    parser.add_argument("--only", default="vit-b16,gpt2")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.models, exist_ok=True)
    builders = {"vit-b16": vit_module, "gpt2": gpt2_module}
    spec_path = os.path.join(args.out, "transformers.spec.json")
    specs = qc.load_spec(spec_path) if os.path.exists(spec_path) else {}
    for name in args.only.split(","):
        start = time.time()
        module, inputs, input_names = builders[name]()
        raw = os.path.join(args.models, f"{name}.exported.onnx")
        exporter = export(module, inputs, input_names, raw)
        model, inits = skeletonize(raw)
        skeleton = os.path.join(args.out, f"{name}.skeleton.onnx.gz")
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
            f.write(model.SerializeToString())
        with open(skeleton, "wb") as f:
            f.write(buf.getvalue())
        entry = {"exporter": exporter, "initializers": inits}
        full = qc.rebuild_model(skeleton, entry)
        full_path = os.path.join(args.models, f"{name}.onnx")
        with open(full_path, "wb") as f:
            f.write(full)
        entry["sha256"] = qc.sha256_file(full_path)
        entry["bytes"] = len(full)
        entry["ops"] = op_counts(model)
        entry["regenerated_elements"] = int(sum(int(np.prod(v["shape"])) for v in inits.values()))
        specs[name] = entry
        os.remove(raw)
        print(f"{name}: {exporter}; {len(inits)} initializers regenerated "
              f"({entry['regenerated_elements']} values), {len(full) / 1e6:.0f} MB, "
              f"sha256 {entry['sha256']}, {time.time() - start:.0f} s; ops {entry['ops']}", flush=True)
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(specs, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
