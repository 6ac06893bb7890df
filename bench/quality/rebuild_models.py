#!/usr/bin/env python3
"""Rebuilds the benchmark's random-weight transformers (ViT-B/16, GPT-2) from the skeletons in
bench/quality/models: each regenerated initializer is filled from quality_common's counter-based
hash with the mean and std that transformers.spec.json gives, and the result must have the SHA-256
that the exporting machine recorded, byte for byte.

  rebuild_models.py [--cache DIR] [--only vit-b16,gpt2]   # prints NAME PATH per model

The cache is $QOPT_BENCH_CACHE/models, else ~/.cache/qopt/bench/models; a model already there with
the right SHA-256 is not rebuilt.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import quality_common as qc  # noqa: E402

MODELS_DIR = os.path.join(HERE, "models")
SPEC = os.path.join(MODELS_DIR, "transformers.spec.json")


def default_cache():
    if os.environ.get("QOPT_BENCH_CACHE"):
        return os.path.join(os.environ["QOPT_BENCH_CACHE"], "models")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "qopt", "bench", "models")


class RebuildError(Exception):
    pass


def rebuild(name, cache, log=print):
    """The path of model `name`, rebuilt into `cache` unless already there; RebuildError when the
    bytes differ from the recorded ones."""
    if not os.path.exists(SPEC):
        raise RebuildError(f"{SPEC} is missing")
    specs = qc.load_spec(SPEC)
    if name not in specs:
        raise RebuildError(f"{SPEC} has no model {name!r} (it has {', '.join(sorted(specs))})")
    entry = specs[name]
    path = os.path.join(cache, f"{name}.onnx")
    if os.path.exists(path) and qc.sha256_file(path) == entry["sha256"]:
        return path
    os.makedirs(cache, exist_ok=True)
    skeleton = os.path.join(MODELS_DIR, f"{name}.skeleton.onnx.gz")
    log(f"rebuilding {name} ({entry['regenerated_elements']} regenerated values) into {path}")
    data = qc.rebuild_model(skeleton, entry)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    got = qc.sha256_file(tmp)
    if got != entry["sha256"]:
        os.remove(tmp)
        raise RebuildError(f"{name}: the rebuilt model's SHA-256 is {got}, the exporting machine "
                           f"recorded {entry['sha256']} ({len(data)} bytes here, "
                           f"{entry['bytes']} there)")
    os.replace(tmp, path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", default=default_cache())
    parser.add_argument("--only", default="vit-b16,gpt2")
    args = parser.parse_args()
    try:
        for name in args.only.split(","):
            print(name, rebuild(name, args.cache, log=lambda m: print(m, file=sys.stderr)))
    except RebuildError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
