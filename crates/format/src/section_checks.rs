//! Consistency checks run when an index opens, after the header and section table checks: the
//! metadata against the matrices, then the optional sections (`cascade`, `selection`, `screen`,
//! `adapter`, `thinking`, `query_shift`, `screen_triage`, `screen_families`, `screen_family_hidden`,
//! `mode_questions`, `late`, `off_topic`, `language_shift`).

use crate::{FormatError, Index, Result, SectionKind};

pub(crate) fn selection(index: &Index) -> Result<()> {
    let Some(sel) = index.selection() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("selection: {message}"),
    };
    for (what, lex, items) in [
        ("tools", &sel.tools_lexical, index.meta().tools.len()),
        ("skills", &sel.skills_lexical, index.meta().skills.len()),
    ] {
        let n_terms = lex.terms.len();
        if lex.idf.len() != n_terms || lex.term_start.len() != n_terms + 1 {
            return Err(bad(format!(
                "{what}: {n_terms} terms but {} idf values and {} term offsets",
                lex.idf.len(),
                lex.term_start.len()
            )));
        }
        if lex.doc_len.len() != items {
            return Err(bad(format!(
                "{what}: {} document lengths for {items} items",
                lex.doc_len.len()
            )));
        }
        if lex.post_doc.len() != lex.post_tf.len()
            || lex.term_start.last().map(|&e| e as usize) != Some(lex.post_doc.len())
            || lex.term_start.windows(2).any(|w| w[0] > w[1])
        {
            return Err(bad(format!("{what}: postings offsets are inconsistent")));
        }
        if lex.post_doc.iter().any(|&d| d as usize >= items) {
            return Err(bad(format!("{what}: a posting names an item past {items}")));
        }
        if lex.terms.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad(format!("{what}: terms are not strictly ascending")));
        }
        if lex.idf.iter().chain([&lex.k1, &lex.b]).any(|x| !x.is_finite() || *x < 0.0) {
            return Err(bad(format!("{what}: a BM25 figure is not a finite number >= 0")));
        }
    }
    for (what, f) in [("tools", &sel.tools), ("skills", &sel.skills)] {
        if !(0.0..=1.0).contains(&f.lexical_weight)
            || !f.gate_z.is_finite()
            || !(0.0..=1.0).contains(&f.lexical_gate)
            || !f.floor_z.is_finite()
        {
            return Err(bad(format!(
                "{what}: fusion weight {} or gates {} / {} out of range",
                f.lexical_weight, f.gate_z, f.lexical_gate
            )));
        }
    }
    if !sel.out_of_mode_penalty.is_finite()
        || sel.mode.semantic_margin.is_some_and(|m| !m.is_finite())
    {
        return Err(bad("the mode penalty or margin is not finite".into()));
    }
    let servers = &sel.servers;
    let tools = index.meta().tools.len();
    if !servers.of_tool.is_empty() && servers.of_tool.len() != tools {
        return Err(bad(format!("{} tool servers for {tools} tools", servers.of_tool.len())));
    }
    if servers.of_tool.iter().flatten().any(|&s| s as usize >= servers.names.len()) {
        return Err(bad(format!("a tool names a server past {}", servers.names.len())));
    }
    if !(0.0..=1.0).contains(&servers.weight) {
        return Err(bad(format!("the server weight {} is not within 0..=1", servers.weight)));
    }
    for (hint, mode) in &sel.hints {
        if !index.meta().modes.iter().any(|m| &m.name == mode) {
            return Err(bad(format!("hint {hint:?} names mode {mode:?}, which the index lacks")));
        }
    }
    Ok(())
}

pub(crate) fn cascade(index: &Index) -> Result<()> {
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("cascade: {message}"),
    };
    let has_rows = index.sections().iter().any(|s| s.kind == SectionKind::StaticRows);
    let Some(c) = index.cascade_meta() else {
        return if has_rows {
            Err(bad("static_rows section without its cascade section".into()))
        } else {
            Ok(())
        };
    };
    let rows = index.matrix(SectionKind::StaticRows).rows();
    let want = c.piece_ids.len()
        + [SectionKind::Tools, SectionKind::Skills, SectionKind::Modes]
            .iter()
            .map(|&k| index.matrix(k).rows())
            .sum::<usize>();
    if rows != want {
        return Err(bad(format!(
            "static_rows has {rows} rows, expected {want} ({} pieces + the tools, skills \
             and modes rows)",
            c.piece_ids.len()
        )));
    }
    if c.piece_weights.len() != c.piece_ids.len() {
        return Err(bad(format!(
            "{} piece weights for {} pieces",
            c.piece_weights.len(),
            c.piece_ids.len()
        )));
    }
    if let Some(w) = c.piece_ids.windows(2).find(|w| w[0] >= w[1]) {
        return Err(bad(format!("piece ids are not strictly ascending at {} {}", w[0], w[1])));
    }
    if let Some(w) = c.piece_weights.iter().find(|w| !w.is_finite() || **w < 0.0) {
        return Err(bad(format!("piece weight {w} is not a finite non-negative number")));
    }
    let finite = [c.min_coverage, c.margin, c.thresholds.tool_min, c.thresholds.skill_min];
    if finite.iter().any(|x| !x.is_finite()) {
        return Err(bad("a threshold is not finite".into()));
    }
    Ok(())
}

pub(crate) fn screen(index: &Index) -> Result<()> {
    let Some(screen) = index.screen() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("screen: {message}"),
    };
    let w = &screen.windowing;
    if w.max_windows == 0 || w.target_bytes == 0 || w.single_window_bytes == 0 {
        return Err(bad(format!("windowing has a zero bound: {w:?}")));
    }
    match (&screen.head, &screen.fallback_reason) {
        (None, None) => return Err(bad("no head and no reason for its absence".into())),
        (Some(_), Some(_)) => return Err(bad("a head and a fallback reason at once".into())),
        _ => {}
    }
    if let Some(head) = &screen.head {
        if head.weights.len() != index.screen_width() {
            return Err(bad(format!(
                "head has {} weights for screen vectors of width {}",
                head.weights.len(),
                index.screen_width()
            )));
        }
        let finite = head.weights.iter().all(|x| x.is_finite())
            && [
                head.attack_weight,
                head.benign_weight,
                head.bias,
                head.threshold,
                head.near_copy_threshold,
            ]
            .iter()
            .all(|x| x.is_finite());
        if !finite {
            return Err(bad("head has a non-finite weight or threshold".into()));
        }
        if !(0.0..=1.0).contains(&head.target_fpr) {
            return Err(bad(format!(
                "target false-positive rate {} is outside 0..=1",
                head.target_fpr
            )));
        }
    }
    if let Some(lexical) = index.screen_lexical() {
        if screen.head.is_none() {
            return Err(bad("a lexical head without the embedding head it adds to".into()));
        }
        let want = 2 * lexical.buckets as usize;
        if lexical.buckets == 0 || lexical.weights.len() != want {
            return Err(bad(format!(
                "lexical head has {} weights for {} buckets per group (want {want})",
                lexical.weights.len(),
                lexical.buckets
            )));
        }
        if !lexical.bias.is_finite() || !lexical.weights.iter().all(|x| x.is_finite()) {
            return Err(bad("lexical head has a non-finite weight".into()));
        }
    }
    Ok(())
}

pub(crate) fn adapter(index: &Index) -> Result<()> {
    let Some(a) = index.adapter() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("adapter: {message}"),
    };
    let rank = a.rank as usize;
    if rank == 0 || rank > index.dim() {
        return Err(bad(format!("rank {rank} is outside 1..={}", index.dim())));
    }
    let want = index.dim() * rank;
    if a.u.len() != want || a.v.len() != want {
        return Err(bad(format!(
            "factors of {} and {} values, rank {rank} at width {} needs {want} each",
            a.u.len(),
            a.v.len(),
            index.dim()
        )));
    }
    if !a.u.iter().chain(&a.v).all(|x| x.is_finite()) {
        return Err(bad("a weight is NaN or infinite".into()));
    }
    Ok(())
}

pub(crate) fn thinking(index: &Index) -> Result<()> {
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("thinking: {message}"),
    };
    let has_rows = index.sections().iter().any(|s| s.kind == SectionKind::ThinkingRows);
    let Some(t) = index.thinking() else {
        return if has_rows {
            Err(bad("thinking_rows section without its thinking section".into()))
        } else {
            Ok(())
        };
    };
    if t.modes.is_empty() {
        return Err(bad("no thinking modes".into()));
    }
    if !t.modes.iter().any(|m| m.name == t.default_mode) {
        return Err(bad(format!("default mode {:?} is not one of the modes", t.default_mode)));
    }
    let rows = index.matrix(SectionKind::ThinkingRows).rows();
    let mut next = 0u64;
    for m in &t.modes {
        if u64::from(m.first_row) != next || m.row_count == 0 {
            return Err(bad(format!(
                "{}: rows {}+{} do not follow on",
                m.name, m.first_row, m.row_count
            )));
        }
        next += u64::from(m.row_count);
    }
    if next != rows as u64 {
        return Err(bad(format!("the modes claim {next} rows, thinking_rows has {rows}")));
    }
    if t.calibration.semantic_margin.is_some_and(|m| !m.is_finite()) {
        return Err(bad("the semantic margin is not a finite number".into()));
    }
    Ok(())
}

/// The metadata section against the matrices and strings.
pub(crate) fn meta(index: &Index) -> Result<()> {
    let m = index.meta();
    let bad = |message: String| FormatError::BadMeta { path: index.path().to_path_buf(), message };
    if m.model.dim != index.header().dim {
        return Err(bad(format!(
            "model dim {} differs from header dim {}",
            m.model.dim,
            index.header().dim
        )));
    }
    let rows_of = |k| index.matrix(k).rows();
    let check_items =
        |kind: SectionKind, spans: &mut dyn Iterator<Item = (&str, u32, u32)>| -> Result<()> {
            let rows = rows_of(kind);
            for (name, first, count) in spans {
                let end = u64::from(first) + u64::from(count);
                if count == 0 || end > rows as u64 {
                    return Err(bad(format!(
                        "{} item {name} spans rows {first}..{end} of {rows}",
                        kind.name()
                    )));
                }
            }
            Ok(())
        };
    check_items(
        SectionKind::Tools,
        &mut m.tools.iter().map(|t| (t.name.as_str(), t.first_row, t.row_count)),
    )?;
    check_items(
        SectionKind::Skills,
        &mut m.skills.iter().map(|t| (t.name.as_str(), t.first_row, t.row_count)),
    )?;
    check_items(
        SectionKind::Modes,
        &mut m.modes.iter().map(|t| (t.name.as_str(), t.first_row, t.row_count)),
    )?;
    if m.injections.len() != rows_of(SectionKind::Injections)
        || m.benign.len() != rows_of(SectionKind::Benign)
    {
        return Err(bad("pattern metadata does not match the injection/benign row counts".into()));
    }
    if m.string_base.len() != SectionKind::MATRICES.len() {
        return Err(bad(format!(
            "string_base has {} entries, expected {}",
            m.string_base.len(),
            SectionKind::MATRICES.len()
        )));
    }
    for (k, base) in SectionKind::MATRICES.iter().zip(&m.string_base) {
        if *base as usize + rows_of(*k) > index.string_count() {
            return Err(bad(format!(
                "row texts of {} run past the {} strings",
                k.name(),
                index.string_count()
            )));
        }
    }
    Ok(())
}

pub(crate) fn query_shift(index: &Index) -> Result<()> {
    let Some(shift) = index.query_shift() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("query_shift: {message}"),
    };
    if index.selection().is_none() {
        return Err(bad("present without a selection section".into()));
    }
    for (what, values, kind) in [
        ("tools", &shift.tools, SectionKind::Tools),
        ("skills", &shift.skills, SectionKind::Skills),
    ] {
        let rows = index.matrix(kind).rows();
        if values.len() != rows {
            return Err(bad(format!("{} {what} values for {rows} {what} rows", values.len())));
        }
        if values.iter().chain([&shift.strength]).any(|x| !x.is_finite()) {
            return Err(bad(format!("a {what} value or the strength is not a finite number")));
        }
    }
    Ok(())
}

pub(crate) fn screen_triage(index: &Index) -> Result<()> {
    let Some(triage) = index.screen_triage() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("screen_triage: {message}"),
    };
    if index.screen_lexical().is_none() {
        return Err(bad("present without a screen_lexical section".into()));
    }
    if !triage.lexical_floor.is_finite() {
        return Err(bad(format!(
            "the lexical floor {} is not a finite number",
            triage.lexical_floor
        )));
    }
    if let Some(t) = triage.sentence_threshold
        && !t.is_finite()
    {
        return Err(bad(format!("the sentence threshold {t} is not a finite number")));
    }
    for (what, x) in [
        ("max_miss", triage.max_miss),
        ("oof_missed", triage.oof_missed),
        ("oof_benign_cleared", triage.oof_benign_cleared),
        ("sentence_benign_flagged", triage.sentence_benign_flagged),
    ] {
        if !(0.0..=1.0).contains(&x) {
            return Err(bad(format!("{what} {x} is not a share between 0 and 1")));
        }
    }
    Ok(())
}

pub(crate) fn screen_families(index: &Index) -> Result<()> {
    let Some(families) = index.screen_families() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("screen_families: {message}"),
    };
    if index.screen().and_then(|s| s.head.as_ref()).is_none() {
        return Err(bad("present without a screen head".into()));
    }
    let dim = index.screen_width();
    for h in &families.heads {
        let name = &h.family;
        if h.weights.len() != dim {
            return Err(bad(format!(
                "head {name} has {} weights for dimension {dim}",
                h.weights.len()
            )));
        }
        let floor = h.lexical_floor.unwrap_or(0.0);
        if h.weights.iter().chain([&h.bias, &h.threshold, &floor]).any(|x| !x.is_finite()) {
            return Err(bad(format!("head {name} holds a value that is not a finite number")));
        }
        if let Some(l) = &h.lexical {
            if l.weights.len() != 2 * l.buckets as usize {
                return Err(bad(format!(
                    "head {name}'s lexical head has {} weights for 2 x {} buckets",
                    l.weights.len(),
                    l.buckets
                )));
            }
        } else if h.lexical_floor.is_some() {
            return Err(bad(format!("head {name} has a triage floor but no lexical head")));
        }
        for (what, x) in
            [("oof_recall", h.oof_recall), ("oof_fpr", h.oof_fpr), ("oof_auc", h.oof_auc)]
        {
            if !(0.0..=1.0).contains(&x) {
                return Err(bad(format!("head {name}'s {what} {x} is not between 0 and 1")));
            }
        }
    }
    if !(0.0..=1.0).contains(&families.family_fpr) {
        return Err(bad(format!("family_fpr {} is not between 0 and 1", families.family_fpr)));
    }
    if !(0.0..=1.0).contains(&families.oof_fpr_combined) {
        return Err(bad(format!(
            "oof_fpr_combined {} is not between 0 and 1",
            families.oof_fpr_combined
        )));
    }
    Ok(())
}

pub(crate) fn screen_request(index: &Index) -> Result<()> {
    let Some(r) = index.screen_request() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("screen_request: {message}"),
    };
    if index.screen().and_then(|s| s.head.as_ref()).is_none() {
        return Err(bad("present without a screen head".into()));
    }
    let h = &r.head;
    if h.weights.len() != 2 * h.buckets as usize {
        return Err(bad(format!(
            "the request head has {} weights for 2 x {} buckets",
            h.weights.len(),
            h.buckets
        )));
    }
    if h.weights.iter().chain([&h.bias, &r.threshold, &r.coherence_weight]).any(|x| !x.is_finite())
    {
        return Err(bad("it holds a value that is not a finite number".into()));
    }
    for (what, x) in [("oof_fpr", r.oof_fpr), ("oof_planted_recall", r.oof_planted_recall)] {
        if !(0.0..=1.0).contains(&x) {
            return Err(bad(format!("{what} {x} is not between 0 and 1")));
        }
    }
    if r.coherence_weight < 0.0 {
        return Err(bad(format!(
            "coherence_weight {} is negative (an overlap with the text around may only lower the contrast)",
            r.coherence_weight
        )));
    }
    Ok(())
}

pub(crate) fn mode_questions(index: &Index) -> Result<()> {
    let Some(questions) = index.mode_questions() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("mode_questions: {message}"),
    };
    if index.selection().is_none() {
        return Err(bad("present without a selection section".into()));
    }
    let modes = &index.meta().modes;
    if questions.modes.len() != modes.len() {
        return Err(bad(format!("{} counts for {} modes", questions.modes.len(), modes.len())));
    }
    for (m, c) in modes.iter().zip(&questions.modes) {
        if c.questions > c.examples {
            return Err(bad(format!(
                "mode {} has {} questions among {} examples",
                m.name, c.questions, c.examples
            )));
        }
    }
    Ok(())
}

pub(crate) fn late(index: &Index) -> Result<()> {
    let Some(late) = index.late() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("late: {message}"),
    };
    if index.selection().is_none() {
        return Err(bad("present without a selection section".into()));
    }
    if !(0.0..=1.0).contains(&late.blend) {
        return Err(bad(format!("blend {} is outside 0..=1", late.blend)));
    }
    if late.dim as usize != index.dim() {
        return Err(bad(format!("states are {} wide in an index of {}", late.dim, index.dim())));
    }
    let dim = late.dim as usize;
    for (what, items, expected) in [
        ("tools", &late.tools, index.meta().tools.len()),
        ("skills", &late.skills, index.meta().skills.len()),
    ] {
        if items.items() != expected || items.offsets.first().is_some_and(|&o| o != 0) {
            return Err(bad(format!(
                "{} {what} offsets for {expected} {what}",
                items.offsets.len()
            )));
        }
        if items.offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(bad(format!("{what} offsets go backwards")));
        }
        let tokens = items.offsets.last().copied().unwrap_or(0) as usize;
        if items.scales.len() != tokens || items.states.len() != tokens * dim {
            return Err(bad(format!(
                "{what}: {tokens} tokens but {} scales and {} values",
                items.scales.len(),
                items.states.len()
            )));
        }
        if items.scales.iter().any(|s| !s.is_finite() || *s < 0.0) {
            return Err(bad(format!("a {what} scale is not a finite, non-negative number")));
        }
        if items.doc_freq.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(bad(format!("{what} token frequencies are not sorted by id")));
        }
        // Ids are absent in a version 11 index; when present, one per state, each counted.
        if !items.ids.is_empty() {
            if items.ids.len() != tokens {
                return Err(bad(format!("{what}: {tokens} tokens but {} ids", items.ids.len())));
            }
            if let Some(id) = items.ids.iter().find(|&&id| items.doc_freq(id) == 0) {
                return Err(bad(format!("{what}: token id {id} has no document frequency")));
            }
        }
    }
    Ok(())
}

pub(crate) fn language_shift(index: &Index) -> Result<()> {
    let Some(shift) = index.language_shift() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("language_shift: {message}"),
    };
    if index.selection().is_none() {
        return Err(bad("present without a selection section".into()));
    }
    let (n, dim) = (shift.languages.len(), index.dim());
    if shift.centroids.len() != n * dim || shift.requests.len() != n {
        return Err(bad(format!(
            "{} floats and {} counts for {n} languages of width {dim}",
            shift.centroids.len(),
            shift.requests.len()
        )));
    }
    if shift.catalog_language.is_some_and(|c| c as usize >= n) {
        return Err(bad(format!("catalog language {:?} of {n}", shift.catalog_language)));
    }
    if let Some(unknown) = shift.unmoved.iter().find(|l| !shift.languages.contains(l)) {
        return Err(bad(format!(
            "unmoved language {unknown:?} is not among {:?}",
            shift.languages
        )));
    }
    if shift.centroids.iter().chain([&shift.strength, &shift.full_margin]).any(|x| !x.is_finite())
        || shift.full_margin <= 0.0
    {
        return Err(bad(
            "a value is not a finite number, or the full margin is not positive".into()
        ));
    }
    Ok(())
}

pub(crate) fn screen_family_hidden(index: &Index) -> Result<()> {
    let Some(hidden) = index.screen_family_hidden() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("screen_family_hidden: {message}"),
    };
    let Some(families) = index.screen_families() else {
        return Err(bad("present without a screen_families section".into()));
    };
    let dim = index.screen_width();
    for layer in &hidden.layers {
        if !families.heads.iter().any(|h| h.family == layer.family) {
            return Err(bad(format!("a layer for {:?}, which has no family head", layer.family)));
        }
        let units = layer.units();
        if units == 0 || layer.outputs.len() != units || layer.weights.len() != units * dim {
            return Err(bad(format!(
                "{:?}: {} weights, {units} biases and {} outputs for width {dim}",
                layer.family,
                layer.weights.len(),
                layer.outputs.len()
            )));
        }
        if layer.weights.iter().chain(&layer.biases).chain(&layer.outputs).any(|x| !x.is_finite()) {
            return Err(bad(format!("{:?}: a value is not a finite number", layer.family)));
        }
    }
    Ok(())
}

pub(crate) fn screen_layer(index: &Index) -> Result<()> {
    let Some(layer) = index.screen_layer() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("screen_layer: {message}"),
    };
    if index.screen().is_none() {
        return Err(bad("present without a screen section".into()));
    }
    if layer == 0 {
        return Err(bad("layer 0 is the token embeddings, not a layer's states".into()));
    }
    Ok(())
}

pub(crate) fn off_topic(index: &Index) -> Result<()> {
    let Some(off) = index.off_topic() else { return Ok(()) };
    let bad = |message: String| FormatError::BadMeta {
        path: index.path().to_path_buf(),
        message: format!("off_topic: {message}"),
    };
    if index.selection().is_none() {
        return Err(bad("present without a selection section".into()));
    }
    let dim = index.dim();
    if off.rows.len() != off.names.len() * dim {
        return Err(bad(format!(
            "{} floats for {} topics of width {dim}",
            off.rows.len(),
            off.names.len()
        )));
    }
    if off.rows.iter().chain([&off.margin]).any(|x| !x.is_finite()) {
        return Err(bad("it holds a value that is not a finite number".into()));
    }
    Ok(())
}
