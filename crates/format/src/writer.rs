use crate::layout::{
    ALIGN, FLAG_ROWS_NORMALISED, FORMAT_VERSION, HEADER_LEN, MAGIC, SECTION_ENTRY_LEN, SectionKind,
    align_up, stride_for,
};
use crate::{FormatError, IndexMeta, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// Builds an index in memory and writes it atomically. Sections are laid out in the fixed order
/// of [`SectionKind::ALL`], so the same content always gives the same bytes.
#[derive(Debug, Clone)]
pub struct IndexWriter {
    dim: usize,
    fingerprint: [u8; 16],
    matrices: BTreeMap<SectionKind, (usize, Vec<f32>)>,
    strings: Vec<String>,
    meta: Option<Vec<u8>>,
    cascade: Option<Vec<u8>>,
    selection: Option<Vec<u8>>,
    screen: Option<Vec<u8>>,
    screen_lexical: Option<Vec<u8>>,
    adapter: Option<Vec<u8>>,
    thinking: Option<Vec<u8>>,
    query_shift: Option<Vec<u8>>,
    screen_triage: Option<Vec<u8>>,
    screen_families: Option<Vec<u8>>,
    mode_questions: Option<Vec<u8>>,
    prompts: Option<Vec<u8>>,
    screen_request: Option<Vec<u8>>,
    off_topic: Option<Vec<u8>>,
    language_shift: Option<Vec<u8>>,
    screen_family_hidden: Option<Vec<u8>>,
    screen_layer: Option<Vec<u8>>,
    late: Option<Vec<u8>>,
    late_ids: Option<Vec<u8>>,
}

impl IndexWriter {
    /// A writer for rows of width `dim`, stamped with a model fingerprint.
    pub fn new(dim: usize, fingerprint: [u8; 16]) -> Self {
        Self {
            dim,
            fingerprint,
            matrices: BTreeMap::new(),
            strings: Vec::new(),
            meta: None,
            cascade: None,
            selection: None,
            screen: None,
            screen_lexical: None,
            adapter: None,
            thinking: None,
            query_shift: None,
            screen_triage: None,
            screen_families: None,
            mode_questions: None,
            prompts: None,
            screen_request: None,
            off_topic: None,
            language_shift: None,
            screen_family_hidden: None,
            screen_layer: None,
            late: None,
            late_ids: None,
        }
    }

    /// Sets a matrix from `rows * dim` floats (row-major, unpadded). Rows must be unit length or
    /// zero, and finite.
    pub fn matrix(&mut self, kind: SectionKind, data: Vec<f32>) -> Result<&mut Self> {
        if !kind.is_matrix() {
            return Err(FormatError::InvalidInput(format!(
                "{} is not a matrix section",
                kind.name()
            )));
        }
        if self.dim == 0 || !data.len().is_multiple_of(self.dim) {
            return Err(FormatError::InvalidInput(format!(
                "{}: {} floats is not a whole number of rows of width {}",
                kind.name(),
                data.len(),
                self.dim
            )));
        }
        for (row, chunk) in data.chunks_exact(self.dim).enumerate() {
            if chunk.iter().any(|x| !x.is_finite()) {
                return Err(FormatError::InvalidInput(format!(
                    "{} row {row} holds NaN or infinity",
                    kind.name()
                )));
            }
            let norm: f64 = chunk.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
            if norm != 0.0 && (norm - 1.0).abs() > 1e-3 {
                return Err(FormatError::InvalidInput(format!(
                    "{} row {row} has squared norm {norm:.4}; rows must be L2-normalised",
                    kind.name()
                )));
            }
        }
        let rows = data.len() / self.dim;
        self.matrices.insert(kind, (rows, data));
        Ok(self)
    }

    /// A writer holding everything `index` holds, to write it again with a section replaced
    /// (e.g. `switchyard fit` writing a fitted selection section). Writing it unchanged gives
    /// the same bytes.
    pub fn from_index(index: &crate::Index) -> Result<Self> {
        let mut w = IndexWriter::new(index.dim(), index.header().fingerprint);
        let unpadded = |m: crate::MatrixView<'_>| -> Vec<f32> {
            (0..m.rows()).flat_map(|r| m.row(r).iter().copied()).collect()
        };
        for kind in SectionKind::MATRICES {
            w.matrix(kind, unpadded(index.matrix(kind)))?;
        }
        w.strings((0..index.string_count()).map(|i| index.string(i).to_string()).collect());
        w.meta(index.meta())?;
        if let Some(st) = index.static_space() {
            w.cascade(unpadded(index.matrix(SectionKind::StaticRows)), st.meta)?;
        }
        if let Some(sel) = index.selection() {
            w.selection(sel)?;
        }
        if let Some(screen) = index.screen() {
            w.screen(screen)?;
        }
        if let Some(lexical) = index.screen_lexical() {
            w.screen_lexical(lexical)?;
        }
        if let Some(adapter) = index.adapter() {
            w.adapter(adapter)?;
        }
        if let Some(thinking) = index.thinking() {
            w.thinking(unpadded(index.matrix(SectionKind::ThinkingRows)), thinking)?;
        }
        if let Some(shift) = index.query_shift() {
            w.query_shift(shift)?;
        }
        if let Some(triage) = index.screen_triage() {
            w.screen_triage(triage)?;
        }
        if let Some(families) = index.screen_families() {
            w.screen_families(families)?;
        }
        if let Some(questions) = index.mode_questions() {
            w.mode_questions(questions)?;
        }
        if let Some(late) = index.late() {
            w.late(late)?;
        }
        if let Some(prompts) = index.prompts() {
            w.prompts(prompts)?;
        }
        if let Some(request) = index.screen_request() {
            w.screen_request(request)?;
        }
        if let Some(shift) = index.language_shift() {
            w.language_shift(shift)?;
        }
        if let Some(hidden) = index.screen_family_hidden() {
            w.screen_family_hidden(hidden)?;
        }
        if let Some(layer) = index.screen_layer_meta() {
            w.screen_layer(layer)?;
        }
        if let Some(off_topic) = index.off_topic() {
            w.off_topic(off_topic)?;
        }
        Ok(w)
    }

    /// Sets the row texts (strings section).
    pub fn strings(&mut self, strings: Vec<String>) -> &mut Self {
        self.strings = strings;
        self
    }

    /// Sets the metadata.
    pub fn meta(&mut self, meta: &IndexMeta) -> Result<&mut Self> {
        self.meta = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the cascade: its static rows (`rows * dim` floats, unit length or zero) and its
    /// metadata. Both sections are written together or not at all.
    pub fn cascade(&mut self, rows: Vec<f32>, meta: &crate::CascadeMeta) -> Result<&mut Self> {
        self.matrix(SectionKind::StaticRows, rows)?;
        self.cascade = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the selection section (lexical statistics, fusion, gates, mode calibration).
    pub fn selection(&mut self, meta: &crate::SelectionMeta) -> Result<&mut Self> {
        self.selection = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the screen section (the learned injection screen and the windowing of entries).
    pub fn screen(&mut self, meta: &crate::ScreenMeta) -> Result<&mut Self> {
        self.screen = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the screen's lexical head (written only beside a screen section).
    pub fn screen_lexical(&mut self, meta: &crate::LexicalScreenMeta) -> Result<&mut Self> {
        self.screen_lexical = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the screen's triage (written only beside a lexical screen).
    pub fn screen_triage(&mut self, meta: &crate::ScreenTriageMeta) -> Result<&mut Self> {
        self.screen_triage = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the screen's family heads (written only beside a screen section).
    pub fn screen_families(&mut self, meta: &crate::ScreenFamiliesMeta) -> Result<&mut Self> {
        self.screen_families = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets how many of each mode's examples ask a question (written only beside a selection
    /// section).
    pub fn mode_questions(&mut self, meta: &crate::ModeQuestionsMeta) -> Result<&mut Self> {
        self.mode_questions = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the screen's request contrast (written only beside a screen section).
    pub fn screen_request(&mut self, meta: &crate::ScreenRequestMeta) -> Result<&mut Self> {
        self.screen_request = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the off-topic check's general topics (written only beside a selection section).
    pub fn off_topic(&mut self, meta: &crate::OffTopicMeta) -> Result<&mut Self> {
        self.off_topic = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the language shift of tasks (written only beside a selection section).
    pub fn language_shift(&mut self, meta: &crate::LanguageShiftMeta) -> Result<&mut Self> {
        self.language_shift = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the hidden layers of the screen's family heads (written only beside them).
    pub fn screen_family_hidden(
        &mut self,
        meta: &crate::ScreenFamilyHiddenMeta,
    ) -> Result<&mut Self> {
        self.screen_family_hidden = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the middle layer the screen's heads read (written only beside a screen section).
    pub fn screen_layer(&mut self, meta: &crate::ScreenLayerMeta) -> Result<&mut Self> {
        self.screen_layer = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the catalog's own prompt texts.
    pub fn prompts(&mut self, meta: &crate::PromptsMeta) -> Result<&mut Self> {
        self.prompts = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the items' token states for late interaction (written only beside a selection
    /// section).
    pub fn late(&mut self, meta: &crate::LateMeta) -> Result<&mut Self> {
        self.late = Some(meta.encode()?);
        // The ids go in a section of their own, so the `late` section reads as in version 11.
        let ids =
            crate::LateIdsMeta { tools: meta.tools.ids.clone(), skills: meta.skills.ids.clone() };
        let any = !ids.tools.is_empty() || !ids.skills.is_empty();
        self.late_ids = if any { Some(ids.encode()?) } else { None };
        Ok(self)
    }

    /// Sets the query shift (written only beside a selection section).
    pub fn query_shift(&mut self, meta: &crate::QueryShiftMeta) -> Result<&mut Self> {
        self.query_shift = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the thinking modes: their rows (`rows * dim` floats, unit length) and metadata. Both
    /// sections are written together or not at all.
    pub fn thinking(&mut self, rows: Vec<f32>, meta: &crate::ThinkingMeta) -> Result<&mut Self> {
        self.matrix(SectionKind::ThinkingRows, rows)?;
        self.thinking = Some(meta.encode()?);
        Ok(self)
    }

    /// Sets the adapter section (the query adapter the tools and skills rows were mapped with).
    pub fn adapter(&mut self, meta: &crate::AdapterMeta) -> Result<&mut Self> {
        self.adapter = Some(meta.encode()?);
        Ok(self)
    }

    fn matrix_payload(&self, kind: SectionKind) -> Result<(SectionKind, Vec<u8>, u64, u32, u32)> {
        let stride = stride_for(self.dim);
        let (rows, data) = match self.matrices.get(&kind) {
            Some((r, d)) => (*r, d.as_slice()),
            None => (0, &[][..]),
        };
        let mut bytes = Vec::with_capacity(rows * stride * 4);
        for row in data.chunks_exact(self.dim.max(1)) {
            for x in row {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
            bytes.resize(bytes.len() + (stride - self.dim) * 4, 0);
        }
        Ok((kind, bytes, rows as u64, u32_of(self.dim)?, u32_of(stride)?))
    }

    /// Serialises the whole file.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut payloads: Vec<(SectionKind, Vec<u8>, u64, u32, u32)> = Vec::new(); // kind, bytes, rows, cols, stride
        for kind in SectionKind::MATRICES {
            payloads.push(self.matrix_payload(kind)?);
        }
        let mut text = Vec::new();
        let mut offsets = Vec::with_capacity((self.strings.len() + 1) * 4);
        offsets.extend_from_slice(&0u32.to_le_bytes());
        for s in &self.strings {
            text.extend_from_slice(s.as_bytes());
            offsets.extend_from_slice(&u32_of(text.len())?.to_le_bytes());
        }
        let n_strings = self.strings.len() as u64;
        payloads.push((SectionKind::Strings, text.clone(), 0, 0, 0));
        payloads.push((SectionKind::StringOffsets, offsets, n_strings + 1, 1, 1));
        let meta = self
            .meta
            .clone()
            .ok_or_else(|| FormatError::InvalidInput("metadata was not set".into()))?;
        payloads.push((SectionKind::Meta, meta, 0, 0, 0));
        if let Some(cascade) = &self.cascade {
            payloads.push(self.matrix_payload(SectionKind::StaticRows)?);
            payloads.push((SectionKind::Cascade, cascade.clone(), 0, 0, 0));
        }
        if let Some(selection) = &self.selection {
            payloads.push((SectionKind::Selection, selection.clone(), 0, 0, 0));
        }
        if let Some(screen) = &self.screen {
            payloads.push((SectionKind::Screen, screen.clone(), 0, 0, 0));
        }
        if let Some(adapter) = &self.adapter {
            payloads.push((SectionKind::Adapter, adapter.clone(), 0, 0, 0));
        }
        if let Some(thinking) = &self.thinking {
            payloads.push(self.matrix_payload(SectionKind::ThinkingRows)?);
            payloads.push((SectionKind::Thinking, thinking.clone(), 0, 0, 0));
        }
        if let Some(lexical) = &self.screen_lexical {
            if self.screen.is_none() {
                return Err(FormatError::InvalidInput(
                    "a lexical screen was set without a screen section".into(),
                ));
            }
            payloads.push((SectionKind::ScreenLexical, lexical.clone(), 0, 0, 0));
        }
        if let Some(shift) = &self.query_shift {
            if self.selection.is_none() {
                return Err(FormatError::InvalidInput(
                    "a query shift was set without a selection section".into(),
                ));
            }
            payloads.push((SectionKind::QueryShift, shift.clone(), 0, 0, 0));
        }
        if let Some(triage) = &self.screen_triage {
            if self.screen_lexical.is_none() {
                return Err(FormatError::InvalidInput(
                    "a screen triage was set without a lexical screen".into(),
                ));
            }
            payloads.push((SectionKind::ScreenTriage, triage.clone(), 0, 0, 0));
        }
        if let Some(families) = &self.screen_families {
            if self.screen.is_none() {
                return Err(FormatError::InvalidInput(
                    "screen family heads were set without a screen section".into(),
                ));
            }
            payloads.push((SectionKind::ScreenFamilies, families.clone(), 0, 0, 0));
        }
        if let Some(questions) = &self.mode_questions {
            if self.selection.is_none() {
                return Err(FormatError::InvalidInput(
                    "mode questions were set without a selection section".into(),
                ));
            }
            payloads.push((SectionKind::ModeQuestions, questions.clone(), 0, 0, 0));
        }
        if let Some(late) = &self.late {
            if self.selection.is_none() {
                return Err(FormatError::InvalidInput(
                    "late interaction was set without a selection section".into(),
                ));
            }
            payloads.push((SectionKind::Late, late.clone(), 0, 0, 0));
            if let Some(ids) = &self.late_ids {
                payloads.push((SectionKind::LateIds, ids.clone(), 0, 0, 0));
            }
        }
        if let Some(prompts) = &self.prompts {
            payloads.push((SectionKind::Prompts, prompts.clone(), 0, 0, 0));
        }
        if let Some(request) = &self.screen_request {
            if self.screen.is_none() {
                return Err(FormatError::InvalidInput(
                    "a request contrast was set without a screen section".into(),
                ));
            }
            payloads.push((SectionKind::ScreenRequest, request.clone(), 0, 0, 0));
        }
        if let Some(off_topic) = &self.off_topic {
            if self.selection.is_none() {
                return Err(FormatError::InvalidInput(
                    "an off-topic check was set without a selection section".into(),
                ));
            }
            payloads.push((SectionKind::OffTopic, off_topic.clone(), 0, 0, 0));
        }
        if let Some(shift) = &self.language_shift {
            if self.selection.is_none() {
                return Err(FormatError::InvalidInput(
                    "a language shift was set without a selection section".into(),
                ));
            }
            payloads.push((SectionKind::LanguageShift, shift.clone(), 0, 0, 0));
        }
        if let Some(hidden) = &self.screen_family_hidden {
            if self.screen_families.is_none() {
                return Err(FormatError::InvalidInput(
                    "family hidden layers were set without family heads".into(),
                ));
            }
            payloads.push((SectionKind::ScreenFamilyHidden, hidden.clone(), 0, 0, 0));
        }
        if let Some(layer) = &self.screen_layer {
            if self.screen.is_none() {
                return Err(FormatError::InvalidInput(
                    "a screen layer was set without a screen section".into(),
                ));
            }
            payloads.push((SectionKind::ScreenLayer, layer.clone(), 0, 0, 0));
        }

        let count = payloads.len();
        let mut offset = align_up(HEADER_LEN + count * SECTION_ENTRY_LEN);
        let mut table = Vec::with_capacity(count * SECTION_ENTRY_LEN);
        let mut body_len = offset;
        let mut placed = Vec::with_capacity(count);
        for (kind, bytes, rows, cols, stride) in &payloads {
            let len = bytes.len();
            let mut e = Vec::with_capacity(SECTION_ENTRY_LEN);
            e.extend_from_slice(&kind.code().to_le_bytes());
            e.extend_from_slice(&kind.dtype().code().to_le_bytes());
            e.extend_from_slice(&(offset as u64).to_le_bytes());
            e.extend_from_slice(&(len as u64).to_le_bytes());
            e.extend_from_slice(&rows.to_le_bytes());
            e.extend_from_slice(&cols.to_le_bytes());
            e.extend_from_slice(&stride.to_le_bytes());
            e.extend_from_slice(&crc32fast::hash(bytes).to_le_bytes());
            e.resize(SECTION_ENTRY_LEN, 0);
            table.extend_from_slice(&e);
            placed.push(offset);
            body_len = offset + len;
            offset = align_up(offset + len);
        }
        let file_len = align_up(body_len);
        let mut out = vec![0u8; file_len];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&u32_of(HEADER_LEN)?.to_le_bytes());
        out[16..24].copy_from_slice(&FLAG_ROWS_NORMALISED.to_le_bytes());
        out[24..28].copy_from_slice(&u32_of(count)?.to_le_bytes());
        out[28..32].copy_from_slice(&u32_of(self.dim)?.to_le_bytes());
        out[32..48].copy_from_slice(&self.fingerprint);
        out[48..56].copy_from_slice(&(file_len as u64).to_le_bytes());
        // 56..60 reserved, zero.
        let crc = crc32fast::hash(&out[0..60]);
        out[60..64].copy_from_slice(&crc.to_le_bytes());
        out[HEADER_LEN..HEADER_LEN + table.len()].copy_from_slice(&table);
        for ((_, bytes, ..), at) in payloads.iter().zip(placed) {
            out[at..at + bytes.len()].copy_from_slice(bytes);
        }
        debug_assert!(out.len().is_multiple_of(ALIGN));
        Ok(out)
    }

    /// Writes the file atomically: a temp file in the same folder, fsync, rename over `path`,
    /// fsync the folder. A crash leaves either the old file or the new one, never a mix.
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        write_atomic(path, &bytes)
    }
}

fn u32_of(n: usize) -> Result<u32> {
    u32::try_from(n)
        .map_err(|_| FormatError::InvalidInput(format!("{n} does not fit the format's u32 fields")))
}

/// Writes `bytes` to `path` through a temp file + fsync + rename + folder fsync.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |e| FormatError::Io { path: path.to_path_buf(), source: e };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "index".into());
    let tmp = dir.join(format!(".{name}.swyd.tmp{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // Persist the rename itself; opening a directory for sync is not possible everywhere.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}
