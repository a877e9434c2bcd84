"""Writes manifests/injection-train.jsonl: the labelled rows the default index's learned
injection screen trains on besides the catalog's own patterns, taken from the public sets in
../shared/data. `models/provision.py` runs it at set-up when that folder is there; the file is
derived from third-party data sets, so it is generated, never committed (see their READMEs for sources and licences: BIPIA MIT, CyberSecEval MIT,
JailbreakBench MIT, NotInject MIT, WildGuardTest ODC-BY).

The split is by content hash, so it is stable and the other halves stay free for reporting:
  train:  BIPIA attacks.jsonl rows with split=train (bare instructions, label 1), and the
          clean contexts of BIPIA samples.jsonl whose `task:context_idx` hashes even (label 0:
          build-index cuts them into windows and plants attacks in them);
          CyberSecEval rows whose `prompt_id` hashes even (a test case and its translations on
          one side; user inputs label 1, system prompts label 0);
          JailbreakBench rows whose `behavior` hashes even (all methods of one behaviour on
          one side), with the category `jailbreak` (jailbreak prompts) or `harmful_request`
          (plain harmful goals), so they also train the screen's jailbreak family head;
          NotInject and WildGuard rows whose text hashes even.
  Rows of one JailbreakBench behaviour, one CyberSecEval case or one BIPIA context carry it as
  `group`, so build-index scores them out of fold together (a head never scores a case it
  trained on told another way).
  report: the odd halves (--report-dir writes them): BIPIA samples.jsonl rows of the other
          contexts, clean and injected (their inserted attacks are the set's test attacks,
          never trained on), and the other CyberSecEval cases, JailbreakBench behaviours,
          NotInject and WildGuard rows.

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
    jb_category = lambda r: "harmful_request" if r.get("kind") == "harmful_goal_plain" else "jailbreak"
    # `group`: one behaviour's prompts (every method's) fall in one fold when build-index
    # scores its rows out of fold, as they fall on one side of this split.
    train += [{"text": r["text"], "label": r["label"], "source": "jailbreakbench-even", "category": jb_category(r), "group": key(r)} for r in jb if half(key(r)) == 0]
    report["jailbreakbench_artifacts"] = [r for r in jb if half(key(r)) == 1]
    for s, tag in [("notinject", "notinject-even"), ("wildguard_benign_injecguard", "wildguard-even")]:
        rs = rows(a.data, s + "/samples.jsonl")
        train += [{"text": r["text"], "label": r["label"], "source": tag} for r in rs if half(r["text"]) == 0]
        report[s] = [r for r in rs if half(r["text"]) == 1]
    # BIPIA: the clean e-mail/table/code contexts of one half (by context) are benign
    # hosts; build-index plants attacks in them. The other half's contexts, clean and
    # injected, are reported on; their inserted attacks are the set's test attacks,
    # never trained on.
    bp = rows(a.data, "bipia/samples.jsonl")
    ctx = lambda r: f"{r['task']}:{r['context_idx']}"
    # `document`: text someone else wrote (an e-mail, a table, code), which the request
    # contrast learns document text from.
    train += [{"text": r["text"], "label": 0, "source": "bipia-contexts-even", "document": True, "group": ctx(r)} for r in bp if half(ctx(r)) == 0 and r["label"] == 0]
    report["bipia"] = [r for r in bp if half(ctx(r)) == 1]
    # CyberSecEval: one half of the test cases (by prompt_id, so a case and its
    # translations stay together), system prompts and user inputs; report on the rest.
    cs = rows(a.data, "cyberseceval_prompt_injection/samples.jsonl")
    case = lambda r: str(r["prompt_id"])
    train += [{"text": r["text"], "label": r["label"], "source": "cyberseceval-even", "group": case(r)} for r in cs if half(case(r)) == 0]
    report["cyberseceval_prompt_injection"] = [r for r in cs if half(case(r)) == 1]
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
