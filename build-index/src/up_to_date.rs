//! Whether an existing index's sections agree with what this build would write for the same
//! catalog and model: the checks `build_to_file` and `eval`'s index cache read before keeping
//! a file.

use crate::REQUESTS_BY_LANGUAGE;
use crate::screen;
use crate::train_file::ScreenTraining;
use switchyard_embed::Embedder;
use switchyard_format::Index;
use switchyard_manifest::Catalog;

/// Whether `existing`'s late section agrees with the model's late-interaction share: the same
/// share, or no section. A catalog over the states' budget has none whatever the share, so an
/// index without one passes unless the share is 0 and it has one. (A share raised from 0 is
/// caught by [`crate::BUILDER_VERSION`], bumped with it.)
pub fn late_matches(existing: &Index, embedder: &dyn Embedder) -> bool {
    let share = embedder.info().late_interaction;
    existing.late().is_none_or(|l| share > 0.0 && l.blend == share.min(1.0))
}

/// Whether `existing`'s off-topic section agrees with the model's margin and the catalog's
/// `off_topic.toml`: the same margin, or no section for a model without one, an index with a
/// query adapter (which never has one) or a catalog that turns the check off (`check`).
pub fn off_topic_matches(existing: &Index, embedder: &dyn Embedder, check: bool) -> bool {
    let expected =
        embedder.info().off_topic_margin.filter(|_| existing.adapter().is_none() && check);
    existing.off_topic().map(|o| o.margin) == expected
}

/// Whether `existing`'s language shift agrees with the model's settings and this build's
/// requests: the same strength, margin and languages, or no section for a model without one
/// (or an index with a query adapter, which never has one).
pub fn language_shift_matches(existing: &Index, embedder: &dyn Embedder) -> bool {
    let expected = embedder.info().language_shift.as_ref().filter(|_| existing.adapter().is_none());
    match (existing.language_shift(), expected) {
        (None, None) => true,
        (Some(s), Some(e)) => {
            s.strength == e.strength
                && s.full_margin == e.full_margin
                && s.unmoved == e.unmoved
                && s.requests.len() == REQUESTS_BY_LANGUAGE.len()
                && REQUESTS_BY_LANGUAGE
                    .iter()
                    .zip(s.languages.iter().zip(&s.requests))
                    .all(|((l, r), (sl, &sn))| l == sl && r.len() == sn as usize)
        }
        _ => false,
    }
}

/// Whether `existing`'s screen (if any) was trained by this build's screen code on texts this
/// build's preparation made: a head trained on texts prepared otherwise is not the one this
/// build would store.
pub fn screen_code_matches(existing: &Index) -> bool {
    existing.screen().is_none_or(|s| {
        s.builder_version == screen::SCREEN_BUILDER_VERSION
            && s.windowing.prepare_version == switchyard_untrusted::PREPARE_VERSION
    })
}

/// Whether `existing`'s counts of mode examples that ask questions were made by this build's
/// question rules (an index without the counts is older than the format version, caught
/// there). A router ignores counts made by other rules, so an index kept across a change of
/// the rules would route without the question rule until rebuilt.
pub fn mode_questions_match(existing: &Index) -> bool {
    existing
        .mode_questions()
        .is_none_or(|q| q.rules_version == switchyard_lexical::QUESTION_RULES_VERSION)
}

/// Whether `existing`'s family heads are the ones this build would train: the same budget and
/// hidden width; or none, where none was asked for (`family_fpr` 0) or none can be trained (no
/// main head, or no family with enough attacks among the catalog's patterns and the training
/// rows). Without that last case, a catalog without jailbreaks was rebuilt on every run once
/// the default budget was above 0.
pub fn families_match(existing: &Index, screen: &ScreenTraining, catalog: &Catalog) -> bool {
    let options = &screen.options;
    match existing.screen_families() {
        Some(families) => {
            let units = existing
                .screen_family_hidden()
                .and_then(|h| h.layers.first())
                .map_or(0, |l| l.units());
            families.family_fpr == options.family_fpr && units == options.family_hidden
        }
        None => {
            let categories = catalog
                .patterns
                .iter()
                .map(|p| p.category.as_deref())
                .chain(screen.rows.iter().filter(|r| r.attack).map(|r| r.category.as_deref()));
            options.family_fpr == 0.0
                || existing.screen().is_none_or(|s| s.head.is_none())
                || !crate::family::any_trainable(categories)
        }
    }
}
