"""Writes manifests/injection-train.jsonl: the labelled rows the default index's learned
injection screen trains on besides the catalog's own patterns, taken from the public sets in
../shared/data. `models/provision.py` runs it at set-up when that folder is there; the file is
derived from third-party data sets, so it is generated, never committed (see their READMEs for sources and licences: BIPIA MIT, JailbreakBench MIT,
NotInject MIT, WildGuardTest ODC-BY).

The split is by content hash, so it is stable and the other halves stay free for reporting:
  train:  BIPIA attacks.jsonl rows with split=train (bare instructions, label 1);
          JailbreakBench rows whose `behavior` hashes even (all methods of one behaviour on
          one side); NotInject and WildGuard rows whose text hashes even.
  report: BIPIA samples.jsonl (test attacks, contexts never trained), all of CyberSecEval
          (never trained), and the odd halves of the three others (--report-dir writes them).

Usage: python3 build-index/scripts/make_injection_train.py [--data ../shared/data]
                  [--out manifests/injection-train.jsonl] [--report-dir DIR]
"""
import argparse, hashlib, json, os, sys

def half(s):
    return int(hashlib.sha256(s.encode()).hexdigest(), 16) % 2

def rows(data, path):
    with open(os.path.join(data, path), encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default="manifests/injection-train.jsonl")
    ap.add_argument("--report-dir")
    a = ap.parse_args()
    train, report = [], {}
    for r in rows(a.data, "bipia/attacks.jsonl"):
        if r["split"] == "train":
            train.append({"text": r["text"], "label": 1, "source": "bipia-train"})
    jb = rows(a.data, "jailbreakbench_artifacts/samples.jsonl")
    key = lambda r: r.get("behavior") or r["text"]
    train += [{"text": r["text"], "label": r["label"], "source": "jailbreakbench-even"} for r in jb if half(key(r)) == 0]
    report["jailbreakbench_artifacts"] = [r for r in jb if half(key(r)) == 1]
    for s, tag in [("notinject", "notinject-even"), ("wildguard_benign_injecguard", "wildguard-even")]:
        rs = rows(a.data, s + "/samples.jsonl")
        train += [{"text": r["text"], "label": r["label"], "source": tag} for r in rs if half(r["text"]) == 0]
        report[s] = [r for r in rs if half(r["text"]) == 1]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in train)
    old = open(a.out, encoding="utf-8").read() if os.path.exists(a.out) else None
    if old != text:
        # Atomic: build-index never reads a half-written file.
        tmp = a.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, a.out)
    if a.report_dir:
        os.makedirs(a.report_dir, exist_ok=True)
        for s, rs in report.items():
            with open(os.path.join(a.report_dir, s + ".jsonl"), "w", encoding="utf-8") as f:
                for r in rs:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(train)} training rows -> {a.out}" + (" (unchanged)" if old == text else ""), file=sys.stderr)

if __name__ == "__main__":
    main()
