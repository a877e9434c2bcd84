"""Writes the "planted held-out attacks" report set: each attack of tests/injection/heldout.jsonl
planted at a random sentence or line boundary of four clean contexts of BIPIA's report half (the
half make_injection_train.py never trains on), all rows label 1. Fixed seed: the same inputs give
the same file. Neither side took part in any tuning; see benches/RESULTS.md (session 36).

Usage: python3 build-index/scripts/make_injection_train.py --report-dir DIR
       python3 build-index/scripts/plant_heldout_attacks.py --bipia DIR/bipia.jsonl --out FILE
"""
import argparse, json, random, re

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heldout", default="tests/injection/heldout.jsonl")
    ap.add_argument("--bipia", required=True, help="BIPIA's report half (make_injection_train.py --report-dir)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--hosts", type=int, default=4, help="contexts each attack is planted in")
    a = ap.parse_args()
    random.seed(5)
    attacks = [r for r in map(json.loads, open(a.heldout, encoding="utf-8")) if r["label"] == 1]
    clean = [r for r in map(json.loads, open(a.bipia, encoding="utf-8")) if r["label"] == 0]
    rows = []
    for attack in attacks:
        for host in random.sample(clean, a.hosts):
            text = host["text"]
            cuts = [m.end() for m in re.finditer(r"[.!?]\s+|\n", text)]
            cut = random.choice(cuts) if cuts else len(text)
            planted = text[:cut] + attack["text"].strip() + " " + text[cut:]
            rows.append({"text": planted, "label": 1, "lang": attack["lang"]})
    with open(a.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{a.out}: {len(rows)} rows ({len(attacks)} attacks x {a.hosts} contexts)")

if __name__ == "__main__":
    main()
