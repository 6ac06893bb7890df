#!/usr/bin/env python3
"""Calibration data as users hold it gives what the equivalent .npy files give.

A small CNN and a small audio model are calibrated by `qopt -p insert-qdq{calibrator=max}`
on (a) folders of PNG and JPEG images with a preprocessing spec, WAV clips cut into windows,
and .npz archives (numpy.savez, numpy.savez_compressed, stacked and one per sample), and (b)
the same inputs computed here with numpy and written as .npy files. The output models must be
byte-identical: the calibration saw the same numbers. Damaged files and bad specs must exit
with code 2 and a message naming the file or the spec word, and write no output.

  data_files_test.py --qopt QOPT --work DIR
"""
import io
import os
import subprocess
import sys
import wave

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "support"))
from onnx_check_common import fresh_dir, tool_parser  # noqa: E402

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
SPEC = "scale=1/255 mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channels=bgr"
FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def conv_model(path, size=16):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])],
        "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, size, size])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def audio_model(path, frames=400):
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.normal(0, 0.1, (frames, 8)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["audio", "w"], ["y"])], "kws",
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, frames])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def qopt(args, cwd=None):
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd)


def calibrate(tool, model, data, out, extra=()):
    result = qopt([tool, "-p", "insert-qdq{calibrator=max}", "--calib-data", data, *extra,
                   model, out])
    if result.returncode != 0:
        print(result.stdout + result.stderr)
    return result.returncode


def same_bytes(a, b):
    return os.path.exists(a) and os.path.exists(b) and open(a, "rb").read() == open(b, "rb").read()


def normalized(rgb):
    """What SPEC makes of an 8-bit RGB image: BGR, /255, minus mean, over std, NCHW float32."""
    bgr = rgb[:, :, ::-1].astype(np.float64)
    x = (bgr * (1.0 / 255.0) - MEAN) / STD
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def images(args, work):
    model = os.path.join(work, "cnn.onnx")
    conv_model(model)
    rng = np.random.default_rng(2)
    png, jpg, npy = (os.path.join(work, d) for d in ("png", "jpg", "npy_images"))
    jpg_npy = os.path.join(work, "npy_jpg")
    for d in (png, jpg, npy, jpg_npy):
        os.makedirs(d)
    stacked = []
    for i in range(6):
        rgb = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
        Image.fromarray(rgb).save(os.path.join(png, f"img{i}.png"))
        np.save(os.path.join(npy, f"img{i}.npy"), normalized(rgb))
        stacked.append(normalized(rgb)[0])
        Image.fromarray(rgb).save(os.path.join(jpg, f"img{i}.jpg"), quality=90)
        decoded = np.asarray(Image.open(os.path.join(jpg, f"img{i}.jpg")).convert("RGB"))
        np.save(os.path.join(jpg_npy, f"img{i}.npy"), normalized(decoded))
    outs = {k: os.path.join(work, f"cnn.{k}.onnx") for k in ("png", "npy", "jpg", "jpg_npy",
                                                             "savez", "compressed", "npz_dir")}
    check(calibrate(args.qopt, model, npy, outs["npy"]) == 0, "images: .npy folder calibrates")
    check(calibrate(args.qopt, model, png, outs["png"], ["--preprocess", SPEC]) == 0,
          "images: PNG folder with --preprocess calibrates")
    check(same_bytes(outs["png"], outs["npy"]), "images: PNG folder gives the .npy folder's model")
    check(calibrate(args.qopt, model, jpg, outs["jpg"], ["--preprocess", SPEC]) == 0 and
          calibrate(args.qopt, model, jpg_npy, outs["jpg_npy"]) == 0 and
          same_bytes(outs["jpg"], outs["jpg_npy"]),
          "images: JPEG folder gives the model of the same images decoded by PIL (libjpeg-turbo)")
    stacked = np.stack(stacked)
    np.savez(os.path.join(work, "set.npz"), x=stacked)
    np.savez_compressed(os.path.join(work, "set_compressed.npz"), stacked)  # named arr_0
    check(calibrate(args.qopt, model, os.path.join(work, "set.npz"), outs["savez"]) == 0 and
          same_bytes(outs["savez"], outs["npy"]), ".npz: numpy.savez of the stacked set")
    check(calibrate(args.qopt, model, os.path.join(work, "set_compressed.npz"),
                    outs["compressed"]) == 0 and same_bytes(outs["compressed"], outs["npy"]),
          ".npz: numpy.savez_compressed of the stacked set, its one array unnamed")
    npz_dir = os.path.join(work, "npz_dir")
    os.makedirs(npz_dir)
    for i in range(6):
        np.savez(os.path.join(npz_dir, f"s{i}.npz"), x=stacked[i:i + 1])
    check(calibrate(args.qopt, model, npz_dir, outs["npz_dir"]) == 0 and
          same_bytes(outs["npz_dir"], outs["npy"]), ".npz: a folder of one archive per sample")
    return model, png


def audio(args, work):
    model = os.path.join(work, "kws.onnx")
    audio_model(model)
    rng = np.random.default_rng(3)
    wav, npy = os.path.join(work, "wav"), os.path.join(work, "npy_audio")
    os.makedirs(wav)
    os.makedirs(npy)
    count = 0
    for i, length in enumerate([1000, 400, 1250]):
        pcm = (rng.normal(0, 0.2, length).clip(-1, 1) * 32767).astype(np.int16)
        with wave.open(os.path.join(wav, f"clip{i}.wav"), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(pcm.tobytes())
        for start in range(0, length - 400 + 1, 400):  # whole windows of 400, none partial
            window = pcm[start:start + 400].astype(np.float32) / 32768.0
            np.save(os.path.join(npy, f"clip{i}_{start:05d}.npy"), window[None])
            count += 1
    check(count == 6, "audio: the clips hold 6 whole windows")
    out_wav, out_npy = os.path.join(work, "kws.wav.onnx"), os.path.join(work, "kws.npy.onnx")
    check(calibrate(args.qopt, model, wav, out_wav, ["--preprocess", "rate=16000 frames=400"])
          == 0 and calibrate(args.qopt, model, npy, out_npy) == 0 and
          same_bytes(out_wav, out_npy), "audio: WAV clips in windows give the .npy windows' model")
    return model, wav


def range_check(args, work, png):
    """A 1x1 Conv into a BatchNormalization whose running statistics are what the normalized
    images give: the normalized data passes quietly, raw 0..255 pixels get a warning."""
    xs = np.concatenate([np.load(os.path.join(work, "npy_images", f)) for f in
                         sorted(os.listdir(os.path.join(work, "npy_images")))])
    w = np.random.default_rng(4).normal(0, 0.5, (4, 3)).astype(np.float32)
    out = np.einsum("oc,nchw->nohw", w, xs)
    inits = [numpy_helper.from_array(w.reshape(4, 3, 1, 1), "w"),
             numpy_helper.from_array(np.ones(4, np.float32), "gamma"),
             numpy_helper.from_array(np.zeros(4, np.float32), "beta"),
             numpy_helper.from_array(out.mean(axis=(0, 2, 3)).astype(np.float32), "mean"),
             numpy_helper.from_array(out.var(axis=(0, 2, 3)).astype(np.float32), "var")]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"]),
         helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["y"],
                          name="bn")],
        "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])], inits)
    model = os.path.join(work, "bn.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    out_path = os.path.join(work, "bn.int8.onnx")
    for spec, warns in ((SPEC, False), ("channels=bgr", True)):
        result = qopt([args.qopt, "-p", "insert-qdq", "--calib-data", png, "--preprocess", spec,
                       model, out_path])
        warned = "BatchNormalization 'bn' saw in training" in result.stderr
        check(result.returncode == 0 and warned == warns,
              f"range check: '{spec}' {'warns' if warns else 'is quiet'} ({result.stderr.strip()[:160]})")


def failures(args, work, cnn, png, kws, wav):
    def refused(what, data, extra, needle, model=cnn):
        out = os.path.join(work, "refused.onnx")
        if os.path.exists(out):
            os.remove(out)
        result = qopt([args.qopt, "-p", "insert-qdq,verify{samples=0}", "--calib-data", data,
                       *extra, model, out])
        message = result.stderr.strip()
        ok = result.returncode == 2 and needle in message and not os.path.exists(out)
        check(ok, f"{what}: exit 2 naming {needle!r} ({message.splitlines()[-1] if message else ''})")

    good = open(os.path.join(png, "img0.png"), "rb").read()
    bad = os.path.join(work, "bad")
    os.makedirs(bad)
    for name, data in (("truncated.png", good[:len(good) // 2]), ("garbage.jpg", b"\xff\xd8\xff" +
                       bytes(range(256)) * 4), ("empty.png", b"")):
        folder = os.path.join(bad, name.split(".")[0])
        os.makedirs(folder)
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(data)
        refused(f"damaged image {name}", folder, ["--preprocess", SPEC], path)
    clip = open(os.path.join(wav, "clip0.wav"), "rb").read()
    folder = os.path.join(bad, "wav")
    os.makedirs(folder)
    with open(os.path.join(folder, "cut.wav"), "wb") as f:
        f.write(clip[:30])
    refused("truncated WAV", folder, [], os.path.join(folder, "cut.wav"), model=kws)
    npz = os.path.join(bad, "cut.npz")
    with open(npz, "wb") as f:
        f.write(open(os.path.join(work, "set.npz"), "rb").read()[:500])
    refused("truncated .npz", npz, [], npz)
    refused("unknown spec word", png, ["--preprocess", "colour=rgb"], "colour")
    refused("spec for .npy data", os.path.join(work, "npy_images"), ["--preprocess", SPEC],
            "--preprocess")


def main():
    parser = tool_parser(__doc__, "--qopt", "--work")
    args = parser.parse_args()
    fresh_dir(args.work)
    cnn, png = images(args, args.work)
    kws, wav = audio(args, args.work)
    range_check(args, args.work, png)
    failures(args, args.work, cnn, png, kws, wav)
    if FAILURES:
        sys.exit(f"{len(FAILURES)} check(s) failed")
    print("all checks passed")


if __name__ == "__main__":
    main()
