//! The screen's family heads: beside the main head (every attack against every benign row),
//! one more logistic screen per family of attacks, trained on that family's attacks against
//! every benign row, with its own threshold.
//!
//! **Why.** The main head must put one direction between ordinary text and, at once, ordinary
//! requests planted in a document ("Recommend a good book", BIPIA's kind) and role-played
//! harmful requests (jailbreaks). The first kind looks like the benign requests the threshold
//! is placed on, so the direction that serves both serves jailbreaks poorly: a jailbreak head
//! ranks them far better (out-of-fold AUC 0.994 on its rows with e5-small).
//!
//! **On by default** (`ScreenOptions::family_fpr` 0.001, one jailbreak head with 64 hidden
//! units). The heads cannot add recall without adding false positives: with the main head's
//! budget halved to make room, the screen caught more jailbreaks and fewer injections at the
//! same rate (sessions 19, 42 and 45). Beside the main head's full budget, once the thresholds
//! were chosen by case (session 65) and with e5-small reading layer 8 too, the head lifts
//! JailbreakBench recall 0.755 -> 0.942 while NotInject's and WildGuard's benign texts dropped
//! stay at 3.5-3.6%, and it held on a jailbreak set written after its flags were fixed (session
//! 66). `build-index --family-fpr 0` trains none.
//!
//! **Budget.** The main head keeps its `target_fpr`. The family heads may flag `family_fpr`
//! more of the benign rows between them, out of fold: each flags at most its share of the
//! benign rows the heads before it did not flag, so a row flagged by several heads counts
//! once.

/// A family of attack categories that gets a head of its own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Family {
    /// Its name, shown in verdicts.
    pub name: &'static str,
    /// The catalog and training-file categories that belong to it.
    pub categories: &'static [&'static str],
}

/// The families, in the order their thresholds take the budget.
pub(crate) const FAMILIES: &[Family] = &[Family {
    name: "jailbreak",
    categories: &[
        "jailbreak",
        "persona_jailbreak",
        "jailbreak_framing",
        "harmful_request",
        "adversarial_suffix",
        "role_hijack",
    ],
}];

impl Family {
    /// Whether a row of this category belongs to the family.
    pub fn contains(&self, category: Option<&str>) -> bool {
        category.is_some_and(|c| self.categories.contains(&c))
    }
}

/// Whether some family has enough attacks for a head ([`crate::MIN_HEAD_ROWS`]) among attacks
/// of these categories: the catalog's patterns' and the training rows' (their windows and
/// planted windows carry none), as the screen's training counts them.
pub(crate) fn any_trainable<'a>(categories: impl Iterator<Item = Option<&'a str>> + Clone) -> bool {
    FAMILIES.iter().any(|f| {
        categories.clone().filter(|c| f.contains(*c)).count() >= crate::screen::MIN_HEAD_ROWS
    })
}

/// The thresholds of the family heads given the benign rows' out-of-fold scores: `main` (the
/// main head's, with its threshold `main_threshold`) and `families[f]` (each family head's),
/// sharing `allowed_total` flagged benign rows. Returns each family's threshold and the number
/// of benign rows the screen flags in all.
pub(crate) fn thresholds(
    main: &[f64],
    main_threshold: f32,
    families: &[Vec<f64>],
    allowed_total: usize,
) -> (Vec<f32>, usize) {
    let mut flagged: Vec<bool> = main.iter().map(|&s| s as f32 >= main_threshold).collect();
    let mut count = flagged.iter().filter(|&&f| f).count();
    let mut out = Vec::with_capacity(families.len());
    for (k, scores) in families.iter().enumerate() {
        let heads_left = families.len() - k;
        let budget = allowed_total.saturating_sub(count) / heads_left;
        let mut free: Vec<f64> =
            scores.iter().zip(&flagged).filter(|(_, f)| !**f).map(|(s, _)| *s).collect();
        free.sort_by(|a, b| b.total_cmp(a));
        let t = match free.get(budget) {
            Some(&s) => crate::screen::next_up(s as f32),
            None => f32::MIN,
        };
        for (f, &s) in flagged.iter_mut().zip(scores) {
            if !*f && s as f32 >= t {
                *f = true;
                count += 1;
            }
        }
        out.push(t);
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_head_takes_only_the_budget_the_main_head_left() {
        // Ten benign rows; the main head flags the two highest (0.9, 0.8) at 0.75.
        let main = [0.9, 0.8, 0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0];
        // The family head scores another row highest, and one the main head already flags.
        let family = vec![vec![5.0, 0.0, 4.0, 3.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0]];
        // Three flagged rows allowed in all: one more than the main head's.
        let (t, count) = thresholds(&main, 0.75, &family, 3);
        assert_eq!(count, 3);
        assert!(t[0] > 3.0 && t[0] <= 4.0, "{t:?}");
        // A budget the main head already spent leaves the family head only rows above all.
        let (t, count) = thresholds(&main, 0.75, &family, 2);
        assert_eq!(count, 2);
        assert!(t[0] > 4.0, "{t:?}");
    }

    #[test]
    fn jailbreak_categories_belong_to_the_jailbreak_family_and_others_do_not() {
        let f = FAMILIES[0];
        assert!(f.contains(Some("persona_jailbreak")));
        assert!(f.contains(Some("harmful_request")));
        assert!(!f.contains(Some("exfiltration")));
        assert!(!f.contains(None));
    }
}
