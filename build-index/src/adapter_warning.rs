//! The build's warning for an index with a query adapter: what its routes run without.

use std::path::Path;
use switchyard_embed::Embedder;
use switchyard_manifest::Catalog;

/// What an index with a query adapter routes without, said at build time: the off-topic
/// check, the language shift and task parts read the model's space (the topics, centroids and
/// parts are the model's vectors, the items the adapter's), and the static cascade would bypass
/// the adapter. In session 64 the off-topic check run in the adapter's space at the model's
/// margin closed 110 of 118 unrelated tasks but also 48 of 288 real ones, against 3 in the plain
/// index (tool recall@3 0.77 -> 0.65 on nine catalogs): the adapter's scale is not the model's.
/// Task parts need the task's token states, which only a model with late interaction gives.
pub(crate) fn warning(path: &Path, embedder: &dyn Embedder, catalog: &Catalog) -> String {
    let info = embedder.info();
    let model_space = [
        (info.off_topic_margin.is_some() && catalog.off_topic.check)
            .then_some("the off-topic check"),
        info.language_shift.is_some().then_some("the language shift"),
        (info.late_interaction > 0.0).then_some("task parts"),
    ];
    let model_space: Vec<&str> = model_space.into_iter().flatten().collect();
    let listed = match model_space.as_slice() {
        [rest @ .., a, b] => {
            rest.iter().map(|x| format!("{x}, ")).collect::<String>() + &format!("{a} and {b}")
        }
        _ => model_space.concat(),
    };
    let model_space = if listed.is_empty() {
        String::new()
    } else {
        format!("{listed} (they read the model's space, not the adapter's) and without ")
    };
    let unrelated = if listed.contains("off-topic") { " Unrelated tasks get tools." } else { "" };
    format!(
        "{}: warning: an index with a query adapter routes without {model_space}the static \
         cascade (its answers would bypass the adapter).{unrelated} Adapters trained on 24 to 53 tasks of a \
         catalog did not beat the plain index (benches/RESULTS.md, session 64): build without \
         --adapter unless yours wins in `switchyard eval cases --adapter` on tasks it was not \
         trained on",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::warning;
    use crate::test_models::WithMargin;
    use switchyard_embed::HashEmbedder;
    use switchyard_manifest::Catalog;

    fn catalog(off_topic_toml: Option<&str>) -> Catalog {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tools.toml"),
            "[[tool]]\nname = \"calculator\"\ndescription = \"Work out sums.\"\n",
        )
        .unwrap();
        if let Some(text) = off_topic_toml {
            std::fs::write(dir.path().join(switchyard_manifest::OFF_TOPIC_FILE), text).unwrap();
        }
        Catalog::load(dir.path()).unwrap()
    }

    #[test]
    fn names_the_adapter_file_and_each_check_the_plain_index_would_have_run() {
        let path = std::path::Path::new("my.swya");
        let full = warning(path, &WithMargin::new().with_late_interaction(0.8), &catalog(None));
        assert!(full.starts_with("my.swya: warning: "), "{full}");
        assert!(
            full.contains(
                "without the off-topic check and task parts (they read the model's space"
            ),
            "{full}"
        );
        assert!(full.contains("and without the static cascade"), "{full}");
        assert!(full.contains("Unrelated tasks get tools."), "{full}");
        assert!(full.contains("switchyard eval cases --adapter"), "{full}");
        // No margin in the model, or `check = false`: the plain index has no check to lose.
        let without_check = warning(path, &WithMargin::new(), &catalog(Some("check = false\n")));
        assert!(!without_check.contains("off-topic"), "{without_check}");
        assert!(!without_check.contains("Unrelated"), "{without_check}");
        // A model without token states has no task parts either: only the cascade is left.
        let bare = warning(path, &HashEmbedder::new(64), &catalog(None));
        assert!(bare.contains("routes without the static cascade (its answers"), "{bare}");
    }
}
