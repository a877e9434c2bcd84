//! Ranking and classification metrics, each a plain function of its inputs.

use std::collections::BTreeMap;

/// Ranking metrics of one query: `ranked` is best-first, `gold` the relevant names.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryScore {
    /// recall@k for each requested k, in the order given.
    pub recall: Vec<f64>,
    /// 1 if the first result is relevant.
    pub hit1: f64,
    /// Reciprocal rank of the first relevant result (0 if none).
    pub rr: f64,
    /// nDCG@10 with binary relevance.
    pub ndcg10: f64,
}

/// Scores one ranked list. `gold` must not be empty.
pub fn score_query(ranked: &[&str], gold: &[String], ks: &[usize]) -> QueryScore {
    let relevant = |name: &str| gold.iter().any(|g| g == name);
    let recall = ks
        .iter()
        .map(|&k| {
            // A gold name listed twice still counts once.
            let found = gold
                .iter()
                .enumerate()
                .filter(|(i, name)| !gold[..*i].contains(name))
                .filter(|(_, name)| ranked.iter().take(k).any(|r| r == name))
                .count();
            found as f64 / unique(gold) as f64
        })
        .collect();
    let hit1 = ranked.first().is_some_and(|r| relevant(r)) as u8 as f64;
    let rr = ranked.iter().position(|r| relevant(r)).map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, r)| relevant(r))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..unique(gold).min(10)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
    QueryScore { recall, hit1, rr, ndcg10: if ideal > 0.0 { dcg / ideal } else { 0.0 } }
}

fn unique(gold: &[String]) -> usize {
    gold.iter().enumerate().filter(|(i, g)| !gold[..*i].contains(g)).count().max(1)
}

/// Means of [`QueryScore`]s, keyed `recall@k`, `hit@1`, `mrr`, `ndcg@10`, plus `queries`.
#[derive(Debug, Clone, Default)]
pub struct RankingSummary {
    ks: Vec<usize>,
    sums: Vec<f64>,
    hit1: f64,
    rr: f64,
    ndcg10: f64,
    n: usize,
}

impl RankingSummary {
    /// An empty summary for these k.
    pub fn new(ks: &[usize]) -> Self {
        Self { ks: ks.to_vec(), sums: vec![0.0; ks.len()], ..Self::default() }
    }

    /// Adds one query.
    pub fn add(&mut self, s: &QueryScore) {
        for (sum, r) in self.sums.iter_mut().zip(&s.recall) {
            *sum += r;
        }
        self.hit1 += s.hit1;
        self.rr += s.rr;
        self.ndcg10 += s.ndcg10;
        self.n += 1;
    }

    /// The number of queries added.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no query was added.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The means as a JSON-ready map (4 decimals).
    pub fn to_map(&self) -> BTreeMap<String, serde_json::Value> {
        let n = self.n.max(1) as f64;
        let mut m = BTreeMap::new();
        for (k, s) in self.ks.iter().zip(&self.sums) {
            m.insert(format!("recall@{k}"), round4(s / n).into());
        }
        m.insert("hit@1".into(), round4(self.hit1 / n).into());
        m.insert("mrr".into(), round4(self.rr / n).into());
        m.insert("ndcg@10".into(), round4(self.ndcg10 / n).into());
        m.insert("queries".into(), self.n.into());
        m
    }
}

/// Rounds to 4 decimals so JSON reports stay readable and diff cleanly.
pub fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// ROC AUC of `scores` against binary `labels` (ties count one half); `None` without both classes.
pub fn roc_auc(scores: &[f32], labels: &[bool]) -> Option<f64> {
    let pos = labels.iter().filter(|l| **l).count();
    let neg = labels.len() - pos;
    if pos == 0 || neg == 0 {
        return None;
    }
    // Mann-Whitney U with average ranks for ties.
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_pos += order[i..=j].iter().filter(|&&o| labels[o]).count() as f64 * avg_rank;
        i = j + 1;
    }
    let u = rank_sum_pos - (pos * (pos + 1)) as f64 / 2.0;
    Some(u / (pos as f64 * neg as f64))
}

/// Recall at a false-positive rate of at most `fpr`, with the score threshold that gives it:
/// texts scoring strictly above the threshold are flagged. `None` without both classes.
pub fn recall_at_fpr(scores: &[f32], labels: &[bool], fpr: f64) -> Option<(f64, f32)> {
    let mut neg: Vec<f32> =
        scores.iter().zip(labels).filter(|(_, l)| !**l).map(|(s, _)| *s).collect();
    let pos: Vec<f32> = scores.iter().zip(labels).filter(|(_, l)| **l).map(|(s, _)| *s).collect();
    if neg.is_empty() || pos.is_empty() {
        return None;
    }
    neg.sort_by(|a, b| b.total_cmp(a));
    // At most floor(fpr * n) negatives may score above the threshold.
    let allowed = (fpr * neg.len() as f64).floor() as usize;
    let threshold = neg[allowed.min(neg.len() - 1)];
    let caught = pos.iter().filter(|s| **s > threshold).count();
    Some((caught as f64 / pos.len() as f64, threshold))
}

/// Counts of a binary decision against labels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Confusion {
    /// Flagged injections.
    pub tp: usize,
    /// Flagged benign texts.
    pub fp: usize,
    /// Missed injections.
    pub fn_: usize,
    /// Passed benign texts.
    pub tn: usize,
}

impl Confusion {
    /// Tallies decisions.
    pub fn from(flagged: &[bool], labels: &[bool]) -> Self {
        let mut c = Self::default();
        for (&f, &l) in flagged.iter().zip(labels) {
            match (f, l) {
                (true, true) => c.tp += 1,
                (true, false) => c.fp += 1,
                (false, true) => c.fn_ += 1,
                (false, false) => c.tn += 1,
            }
        }
        c
    }

    /// Precision, recall, F1 and false-positive rate (each `None` when undefined).
    pub fn rates(&self) -> BTreeMap<String, serde_json::Value> {
        let ratio = |a: usize, b: usize| (b > 0).then(|| round4(a as f64 / b as f64));
        let p = ratio(self.tp, self.tp + self.fp);
        let r = ratio(self.tp, self.tp + self.fn_);
        let f1 = match (p, r) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(round4(2.0 * p * r / (p + r))),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        let mut m = BTreeMap::new();
        m.insert("precision".into(), p.into());
        m.insert("recall".into(), r.into());
        m.insert("f1".into(), f1.into());
        m.insert("fpr".into(), ratio(self.fp, self.fp + self.tn).into());
        m.insert("tp".into(), self.tp.into());
        m.insert("fp".into(), self.fp.into());
        m.insert("fn".into(), self.fn_.into());
        m.insert("tn".into(), self.tn.into());
        m
    }
}

/// Percentile (nearest rank) of unsorted samples; 0 when empty.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}
