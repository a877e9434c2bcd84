//! The metrics, checked against values worked out by hand.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use switchyard_eval::metrics::*;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn ranking_metrics_of_one_query() {
    let q = score_query(&["a", "b", "c", "d"], &s(&["c", "x"]), &[1, 3, 5]);
    assert_eq!(q.recall, [0.0, 0.5, 0.5]);
    assert_eq!(q.hit1, 0.0);
    assert!((q.rr - 1.0 / 3.0).abs() < 1e-12);
    // DCG = 1/log2(4) = 0.5; ideal with two relevant = 1 + 1/log2(3).
    let ideal = 1.0 + 1.0 / 3f64.log2();
    assert!((q.ndcg10 - 0.5 / ideal).abs() < 1e-12);
}

#[test]
fn a_gold_name_listed_twice_counts_once() {
    let q = score_query(&["a"], &s(&["a", "a"]), &[1]);
    assert_eq!(q.recall, [1.0]);
    assert_eq!(q.ndcg10, 1.0);
}

#[test]
fn an_empty_ranking_scores_zero() {
    let q = score_query(&[], &s(&["a"]), &[1, 10]);
    assert_eq!((q.recall.clone(), q.hit1, q.rr, q.ndcg10), (vec![0.0, 0.0], 0.0, 0.0, 0.0));
}

#[test]
fn auc_is_one_for_perfect_separation_and_half_for_ties() {
    assert_eq!(roc_auc(&[0.9, 0.8, 0.1, 0.2], &[true, true, false, false]), Some(1.0));
    assert_eq!(roc_auc(&[0.5, 0.5], &[true, false]), Some(0.5));
    assert_eq!(roc_auc(&[0.1, 0.9], &[true, false]), Some(0.0));
    assert_eq!(roc_auc(&[0.1], &[false]), None);
}

#[test]
fn recall_at_fpr_never_exceeds_the_allowed_false_positives() {
    // 100 negatives at 0.00..0.99, positives at 0.985, 0.975, 0.5.
    let mut scores: Vec<f32> = (0..100).map(|i| i as f32 / 100.0).collect();
    let mut labels = vec![false; 100];
    scores.extend([0.985, 0.975, 0.5]);
    labels.extend([true, true, true]);
    // 1% of 100 = 1 negative may pass: the threshold is the second highest negative (0.98).
    let (r, t) = recall_at_fpr(&scores, &labels, 0.01).unwrap();
    assert_eq!(t, 0.98);
    assert!((r - 1.0 / 3.0).abs() < 1e-12);
    let (r5, _) = recall_at_fpr(&scores, &labels, 0.05).unwrap();
    assert!((r5 - 2.0 / 3.0).abs() < 1e-12);
}

#[test]
fn confusion_rates() {
    let c = Confusion::from(&[true, true, false, false, true], &[true, false, true, false, true]);
    assert_eq!((c.tp, c.fp, c.fn_, c.tn), (2, 1, 1, 1));
    let r = c.rates();
    assert_eq!(r["precision"], 0.6667);
    assert_eq!(r["recall"], 0.6667);
    assert_eq!(r["fpr"], 0.5);
    // A set with only benign texts has no recall or precision, but a false-positive rate.
    let benign = Confusion::from(&[false, true], &[false, false]).rates();
    assert_eq!(benign["recall"], serde_json::Value::Null);
    assert_eq!(benign["fpr"], 0.5);
}

#[test]
fn percentiles_use_nearest_rank() {
    let v: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(percentile(&v, 50.0), 50.0);
    assert_eq!(percentile(&v, 95.0), 95.0);
    assert_eq!(percentile(&v, 99.0), 99.0);
    assert_eq!(percentile(&[], 50.0), 0.0);
}
