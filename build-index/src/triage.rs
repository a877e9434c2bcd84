//! Chooses the screen's triage: the lexical logit under which a window of an untrusted entry
//! is cleared from its text alone, without an embedding.
//!
//! `memory add` spends nearly all its time embedding an entry's windows (a 2,000-word entry
//! has 64), and most windows of an ordinary text look nothing like an attack to the lexical
//! head either. A piece is flagged when its embedding logit plus its lexical logit reaches the
//! threshold, so a piece whose lexical logit is far below the threshold needs an unusually
//! attack-like embedding to be flagged. The floor is where that stops happening on the
//! training rows: out of fold (both heads fitted without the row), among the attacks the full
//! screen flags, at most `max_miss` have a lexical logit below it. Benign rows below it are
//! what the triage saves.

use switchyard_format::ScreenTriageMeta;

/// Default share of the flagged training attacks the triage may clear.
pub const DEFAULT_TRIAGE_MAX_MISS: f32 = 0.005;

/// The triage for out-of-fold full scores `oof`, lexical logits `oof_lexical` and labels `y`
/// at `threshold`; `None` when no training attack is flagged (nothing to measure a floor on)
/// or `max_miss` is not positive (the triage turned off).
pub(crate) fn choose(
    oof: &[f64],
    oof_lexical: &[f64],
    y: &[bool],
    threshold: f32,
    max_miss: f32,
) -> Option<ScreenTriageMeta> {
    if max_miss <= 0.0 {
        return None;
    }
    let mut flagged: Vec<f64> = (0..y.len())
        .filter(|&i| y[i] && oof[i] as f32 >= threshold)
        .map(|i| oof_lexical[i])
        .collect();
    if flagged.is_empty() {
        return None;
    }
    flagged.sort_by(f64::total_cmp);
    // The floor sits at the lowest flagged attack's logit that may not be cleared: the
    // `allowed` lowest lie below it.
    // `max_miss` is an f32 share (0.01 is 0.0099999998 as f64): rounded to six decimals
    // first, so 1% of 200 attacks allows 2.
    let share = (f64::from(max_miss) * 1e6).round() / 1e6;
    let allowed = (share * flagged.len() as f64).floor() as usize;
    let floor = flagged[allowed.min(flagged.len() - 1)] as f32;
    let below = |s: f64| (s as f32) < floor;
    let missed = flagged.iter().filter(|&&s| below(s)).count();
    let benign: Vec<f64> = (0..y.len()).filter(|&i| !y[i]).map(|i| oof_lexical[i]).collect();
    let cleared = benign.iter().filter(|&&s| below(s)).count();
    Some(ScreenTriageMeta {
        lexical_floor: floor,
        max_miss,
        oof_missed: missed as f32 / flagged.len() as f32,
        oof_benign_cleared: cleared as f32 / benign.len().max(1) as f32,
        // Chosen after the head, on documents' sentences (`sentences::calibrate`).
        sentence_threshold: None,
        sentence_texts: 0,
        sentence_benign_flagged: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_clears_at_most_the_allowed_share_of_flagged_attacks() {
        // 200 flagged attacks with lexical logits 0.0, 0.01, ... and 100 benign rows at -3..-1.
        let mut oof = Vec::new();
        let mut lex = Vec::new();
        let mut y = Vec::new();
        for i in 0..200 {
            oof.push(5.0);
            lex.push(i as f64 / 100.0);
            y.push(true);
        }
        for i in 0..100 {
            oof.push(-5.0);
            lex.push(-3.0 + i as f64 / 50.0);
            y.push(false);
        }
        // An attack the screen misses does not count, however low its lexical logit.
        oof.push(0.0);
        lex.push(-9.0);
        y.push(true);
        let t = choose(&oof, &lex, &y, 1.0, 0.01).unwrap();
        assert_eq!(t.lexical_floor, 0.02);
        assert!((t.oof_missed - 0.01).abs() < 1e-6, "{t:?}");
        assert_eq!(t.oof_benign_cleared, 1.0);
        assert!(choose(&oof, &lex, &y, 1.0, 0.0).is_none());
        assert!(choose(&oof, &lex, &y, 99.0, 0.01).is_none());
    }
}
