//! The learned screen's training rows, gathered from the catalog's embedded matrices and the
//! training files, and the screen trained on them (`screen::train`).

use crate::{Result, ScreenTraining, rows::embed_screen, screen, train_file};
use switchyard_embed::Embedder;
use switchyard_manifest::Catalog;

/// Trains the screen section: rows from the catalog's matrices (attack patterns, benign
/// look-alikes, and tools, skills and modes rows and off-topic probes as ordinary text) and
/// from the training files.
pub(crate) fn screen_section(
    embedder: &dyn Embedder,
    training: &ScreenTraining,
    catalog: &Catalog,
    (matrices, texts): (&[Vec<f32>], &[Vec<String>]),
    (off_topic, off_topic_texts): (&[f32], &[String]),
    dim: usize,
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<screen::TrainedScreen> {
    let rows_of =
        |m: &[f32]| -> Vec<Vec<f32>> { m.chunks_exact(dim).map(<[f32]>::to_vec).collect() };
    let look_alikes: &[String] = &texts[4];
    let mut rows: Vec<screen::Row> = Vec::new();
    for (i, (v, t)) in rows_of(&matrices[3]).into_iter().zip(&texts[3]).enumerate() {
        rows.push(screen::Row {
            pattern_row: Some(i),
            category: catalog.patterns.get(i).and_then(|p| p.category.clone()),
            ..screen::Row::new(t.clone(), v, true)
        });
    }
    for (i, (v, t)) in rows_of(&matrices[4]).into_iter().zip(&texts[4]).enumerate() {
        rows.push(screen::Row { benign_row: Some(i), ..screen::Row::new(t.clone(), v, false) });
    }
    let ordinary = [
        (&matrices[0][..], &texts[0][..]),
        (&matrices[1][..], &texts[1][..]),
        (&matrices[2][..], &texts[2][..]),
        (off_topic, off_topic_texts),
    ];
    for (m, t) in ordinary {
        for (v, t) in rows_of(m).into_iter().zip(t) {
            rows.push(screen::Row::new(t.clone(), v, false));
        }
    }
    // With a middle layer, the catalog's rows are embedded again as screen vectors: the
    // matrices hold final vectors alone (and the tools' and skills' as documents, where a
    // screened piece is embedded as a query).
    let layer = training.options.layer_for(embedder);
    if layer.is_some() {
        let texts: Vec<String> = rows.iter().map(|r| r.text.clone()).collect();
        let vectors = match &training.vector_cache {
            Some(cache) => cache.embed(embedder, &texts, layer, progress)?.0,
            None => embed_screen(embedder, &texts, layer, progress)?,
        };
        for (row, v) in rows.iter_mut().zip(vectors) {
            row.embedding = v;
        }
    }
    let catalog_attacks: Vec<String> = catalog.patterns.iter().map(|p| p.text.clone()).collect();
    let train_file::TrainTexts { texts, labels, sources, categories, groups } =
        training.texts_to_embed(&catalog_attacks);
    tracing::info!(
        texts = texts.len(),
        attacks = labels.iter().filter(|&&a| a).count(),
        sources = ?training.options.sources,
        "embedding the screen's training texts"
    );
    if !texts.is_empty() {
        let vectors = match &training.vector_cache {
            Some(cache) => {
                let (vectors, used) = cache.embed(embedder, &texts, layer, progress)?;
                tracing::info!(read_back = used.hits, embedded = used.embedded, "vector cache");
                vectors
            }
            None => embed_screen(embedder, &texts, layer, progress)?,
        };
        let labelled = labels.into_iter().zip(texts).zip(sources).zip(categories).zip(groups);
        for (v, ((((attack, text), source), category), group)) in vectors.into_iter().zip(labelled)
        {
            rows.push(screen::Row {
                source,
                category,
                group: Some(group),
                ..screen::Row::new(text, v, attack)
            });
        }
    }
    let mut trained = screen::train(&rows, &matrices[3], &matrices[4], dim, &training.options);
    trained.layer = layer.filter(|_| trained.head.is_some());
    let patterns = (&matrices[3][..], &matrices[4][..]);
    let sentences = if training.options.sentence_pieces {
        crate::sentences::calibrate(
            embedder,
            training,
            look_alikes,
            (&trained, &rows),
            patterns,
            dim,
        )?
    } else {
        None
    };
    if let Some(s) = sentences
        && let Some(triage) = trained.triage.as_mut()
    {
        tracing::info!(
            threshold = s.threshold,
            documents = s.texts,
            flagged = s.flagged,
            "sentence pieces' threshold"
        );
        triage.sentence_threshold = Some(s.threshold);
        triage.sentence_texts = s.texts;
        triage.sentence_benign_flagged = s.flagged;
    }
    trained.request = if trained.head.is_none() {
        Err("the screen has no learned head".into())
    } else if !training.options.request_contrast {
        Err("turned off (--no-request-contrast)".into())
    } else {
        let options = &training.options;
        crate::request::train(&training.rows, &options.prepare, options.target_fpr)
    };
    Ok(trained)
}
