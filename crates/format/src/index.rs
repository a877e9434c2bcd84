use crate::layout::{Dtype, SectionKind, stride_for};
use crate::matrix::MatrixView;
use crate::parse::{parse_header, parse_sections, verify_payloads};
use crate::{
    AdapterMeta, CascadeMeta, FormatError, IndexMeta, LanguageShiftMeta, LateIdsMeta, LateMeta,
    LexicalScreenMeta, ModeQuestionsMeta, OffTopicMeta, PromptsMeta, QueryShiftMeta, Result,
    ScreenFamiliesMeta, ScreenFamilyHiddenMeta, ScreenLayerMeta, ScreenMeta, ScreenRequestMeta,
    ScreenTriageMeta, SelectionMeta, ThinkingMeta,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options for [`Index::open`].
#[derive(Debug, Clone)]
pub struct OpenOptions {
    verify_payload: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self { verify_payload: true }
    }
}

impl OpenOptions {
    /// Default options: payload checksums and finiteness are verified.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether to verify every section's crc32 and that matrices are finite (default true).
    /// Turning it off makes opening O(1) for hot starts of a file already verified.
    pub fn verify_payload(&mut self, yes: bool) -> &mut Self {
        self.verify_payload = yes;
        self
    }
}

/// The parsed header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format version.
    pub version: u32,
    /// Flags.
    pub flags: u64,
    /// Section count.
    pub section_count: u32,
    /// Embedding width.
    pub dim: u32,
    /// Model fingerprint.
    pub fingerprint: [u8; 16],
    /// File length.
    pub file_len: u64,
}

/// One section table entry, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Kind.
    pub kind: SectionKind,
    /// Element type.
    pub dtype: Dtype,
    /// Byte offset.
    pub offset: u64,
    /// Byte length.
    pub len: u64,
    /// Rows (matrices), entries (offsets), 0 otherwise.
    pub rows: u64,
    /// Columns (matrices).
    pub cols: u32,
    /// Floats per stored row (matrices).
    pub stride: u32,
    /// crc32 of the payload.
    pub crc32: u32,
}

enum Storage {
    /// Shared with the `late` section's states, which are read in place.
    Mmap(Arc<memmap2::Mmap>),
    // u32 backing keeps the buffer 4-byte aligned so f32 views cast without copying.
    Owned {
        words: Vec<u32>,
        len: usize,
    },
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mmap(m) => m,
            Storage::Owned { words, len } => &bytemuck::cast_slice(words)[..*len],
        }
    }
}

/// A validated, read-only index. Views borrow from it without copying.
pub struct Index {
    path: PathBuf,
    storage: Storage,
    header: Header,
    sections: Vec<Section>,
    meta: IndexMeta,
    cascade: Option<CascadeMeta>,
    selection: Option<SelectionMeta>,
    screen: Option<ScreenMeta>,
    screen_lexical: Option<LexicalScreenMeta>,
    adapter: Option<AdapterMeta>,
    thinking: Option<ThinkingMeta>,
    query_shift: Option<QueryShiftMeta>,
    screen_triage: Option<ScreenTriageMeta>,
    screen_families: Option<ScreenFamiliesMeta>,
    mode_questions: Option<ModeQuestionsMeta>,
    late: Option<LateMeta>,
    prompts: Option<PromptsMeta>,
    screen_request: Option<ScreenRequestMeta>,
    off_topic: Option<OffTopicMeta>,
    language_shift: Option<LanguageShiftMeta>,
    screen_family_hidden: Option<ScreenFamilyHiddenMeta>,
    screen_layer: Option<ScreenLayerMeta>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// The static embedding space of an index with a cascade (see [`CascadeMeta`]).
#[derive(Debug, Clone, Copy)]
pub struct StaticSpace<'a> {
    /// Piece ids, weights and static thresholds.
    pub meta: &'a CascadeMeta,
    /// One unit row per piece of `meta.piece_ids`.
    pub pieces: MatrixView<'a>,
    /// Static rows of the tools matrix, row for row.
    pub tools: MatrixView<'a>,
    /// Static rows of the skills matrix, row for row.
    pub skills: MatrixView<'a>,
    /// Static rows of the modes matrix, row for row.
    pub modes: MatrixView<'a>,
}

impl Index {
    /// Maps and validates a file. See the crate docs for the checks, in order.
    pub fn open(path: &Path, options: &OpenOptions) -> Result<Self> {
        let file = std::fs::File::open(path)
            .map_err(|e| FormatError::Io { path: path.to_path_buf(), source: e })?;
        // SAFETY: the mapping is read-only and switchyard never modifies an index in place: the
        // writer replaces files by rename, so the mapped inode is never written while mapped.
        // Another program truncating the file under us is outside that contract (as for every
        // mmap reader, e.g. ripgrep's).
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| FormatError::Io { path: path.to_path_buf(), source: e })?;
        Self::parse(path.to_path_buf(), Storage::Mmap(Arc::new(map)), options)
    }

    /// Validates an index held in memory (tests, embedded indexes).
    pub fn from_bytes(bytes: &[u8], options: &OpenOptions) -> Result<Self> {
        let mut words = vec![0u32; bytes.len().div_ceil(4)];
        bytemuck::cast_slice_mut::<u32, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        Self::parse(PathBuf::from("<memory>"), Storage::Owned { words, len: bytes.len() }, options)
    }

    fn parse(path: PathBuf, storage: Storage, options: &OpenOptions) -> Result<Self> {
        let bytes = storage.bytes();
        let header = parse_header(&path, bytes)?;
        let sections = parse_sections(&path, bytes, &header)?;
        if options.verify_payload {
            verify_payloads(&path, bytes, &sections, header.dim as usize)?;
        }
        let meta_section = find(&path, &sections, SectionKind::Meta)?;
        let meta = IndexMeta::decode(slice(bytes, meta_section))
            .map_err(|message| FormatError::BadMeta { path: path.clone(), message })?;
        let optional = |kind| (&path, bytes, sections.as_slice(), kind);
        let cascade = decode_optional(optional(SectionKind::Cascade), CascadeMeta::decode)?;
        let selection =
            decode_optional(optional(SectionKind::Selection), SelectionMeta::decode_any)?;
        let screen = decode_optional(optional(SectionKind::Screen), ScreenMeta::decode)?;
        let screen_lexical =
            decode_optional(optional(SectionKind::ScreenLexical), LexicalScreenMeta::decode)?;
        let adapter = decode_optional(optional(SectionKind::Adapter), AdapterMeta::decode)?;
        let thinking = decode_optional(optional(SectionKind::Thinking), ThinkingMeta::decode)?;
        let query_shift =
            decode_optional(optional(SectionKind::QueryShift), QueryShiftMeta::decode)?;
        let screen_triage =
            decode_optional(optional(SectionKind::ScreenTriage), ScreenTriageMeta::decode_any)?;
        let screen_families =
            decode_optional(optional(SectionKind::ScreenFamilies), ScreenFamiliesMeta::decode)?;
        let mode_questions =
            decode_optional(optional(SectionKind::ModeQuestions), ModeQuestionsMeta::decode)?;
        let prompts = decode_optional(optional(SectionKind::Prompts), PromptsMeta::decode)?;
        let screen_request =
            decode_optional(optional(SectionKind::ScreenRequest), ScreenRequestMeta::decode_any)?;
        let off_topic = decode_optional(optional(SectionKind::OffTopic), OffTopicMeta::decode)?;
        let language_shift =
            decode_optional(optional(SectionKind::LanguageShift), LanguageShiftMeta::decode_any)?;
        let screen_family_hidden = decode_optional(
            optional(SectionKind::ScreenFamilyHidden),
            ScreenFamilyHiddenMeta::decode,
        )?;
        let screen_layer =
            decode_optional(optional(SectionKind::ScreenLayer), ScreenLayerMeta::decode)?;
        let map = if let Storage::Mmap(map) = &storage { Some(map) } else { None };
        let late_decode = |section: &[u8]| crate::late_states::decode(section, map);
        let mut late = decode_optional(optional(SectionKind::Late), late_decode)?;
        if let Some(ids) = decode_optional(optional(SectionKind::LateIds), LateIdsMeta::decode)? {
            let message = "late_ids: present without a late section".into();
            let late = late.as_mut().ok_or(FormatError::BadMeta { path: path.clone(), message })?;
            (late.tools.ids, late.skills.ids) = (ids.tools, ids.skills);
        }
        let index = Self {
            path,
            storage,
            header,
            sections,
            meta,
            cascade,
            selection,
            screen,
            screen_lexical,
            adapter,
            thinking,
            query_shift,
            screen_triage,
            screen_families,
            mode_questions,
            late,
            prompts,
            screen_request,
            off_topic,
            language_shift,
            screen_family_hidden,
            screen_layer,
        };
        index.check_strings()?;
        crate::section_checks::meta(&index)?;
        crate::section_checks::cascade(&index)?;
        crate::section_checks::selection(&index)?;
        crate::section_checks::screen_layer(&index)?;
        crate::section_checks::screen(&index)?;
        crate::section_checks::adapter(&index)?;
        crate::section_checks::thinking(&index)?;
        crate::section_checks::query_shift(&index)?;
        crate::section_checks::screen_triage(&index)?;
        crate::section_checks::screen_families(&index)?;
        crate::section_checks::screen_request(&index)?;
        crate::section_checks::mode_questions(&index)?;
        crate::section_checks::late(&index)?;
        crate::section_checks::off_topic(&index)?;
        crate::section_checks::language_shift(&index)?;
        crate::section_checks::screen_family_hidden(&index)?;
        Ok(index)
    }

    /// The file this index was opened from (`<memory>` for [`Index::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The section table.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// The decoded metadata.
    pub fn meta(&self) -> &IndexMeta {
        &self.meta
    }

    /// Embedding width.
    pub fn dim(&self) -> usize {
        self.header.dim as usize
    }

    /// Raw file bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    /// A zero-copy view of a matrix section (empty if the kind has no rows).
    pub fn matrix(&self, kind: SectionKind) -> MatrixView<'_> {
        let dim = self.dim();
        let stride = stride_for(dim);
        let Some(s) = self.sections.iter().find(|s| s.kind == kind && kind.is_matrix()) else {
            return MatrixView { data: &[], rows: 0, dim, stride };
        };
        let bytes = slice(self.storage.bytes(), s);
        // Alignment and size were proven in `parse_sections` (offset % 64 == 0 on a 4-aligned
        // base, len == rows * stride * 4), so this cast cannot fail; fall back to empty anyway.
        let data: &[f32] = bytemuck::try_cast_slice(bytes).unwrap_or(&[]);
        MatrixView { data, rows: us(s.rows), dim, stride }
    }

    /// The selection section (lexical statistics, fusion, gates, mode calibration), when the
    /// index has one (version 3 on).
    pub fn selection(&self) -> Option<&SelectionMeta> {
        self.selection.as_ref()
    }

    /// The screen's lexical head, when the index has one (version 6 on).
    pub fn screen_lexical(&self) -> Option<&LexicalScreenMeta> {
        self.screen_lexical.as_ref()
    }

    /// The screen section (learned injection head, windowing), when the index has one
    /// (version 4 on).
    pub fn screen(&self) -> Option<&ScreenMeta> {
        self.screen.as_ref()
    }

    /// The query adapter the tools and skills rows were mapped with, when the index was built
    /// with one (version 4 on).
    pub fn adapter(&self) -> Option<&AdapterMeta> {
        self.adapter.as_ref()
    }

    /// What any request scores against each tools and skills row, subtracted from a task's
    /// scores (version 7 on; see [`QueryShiftMeta`]).
    pub fn query_shift(&self) -> Option<&QueryShiftMeta> {
        self.query_shift.as_ref()
    }

    /// Which windows of an untrusted entry need an embedding (version 8 on; see
    /// [`ScreenTriageMeta`]).
    pub fn screen_triage(&self) -> Option<&ScreenTriageMeta> {
        self.screen_triage.as_ref()
    }

    /// The screen's family heads, when the index has them (version 9 on; see
    /// [`ScreenFamiliesMeta`]).
    pub fn screen_families(&self) -> Option<&ScreenFamiliesMeta> {
        self.screen_families.as_ref()
    }

    /// The screen's request contrast, when the index has one (version 14 on; see
    /// [`ScreenRequestMeta`]).
    pub fn screen_request(&self) -> Option<&ScreenRequestMeta> {
        self.screen_request.as_ref()
    }

    /// The off-topic check's general topics (version 16 on; see [`OffTopicMeta`]).
    pub fn off_topic(&self) -> Option<&OffTopicMeta> {
        self.off_topic.as_ref()
    }

    /// The hidden layers of the screen's family heads (version 19 on; see
    /// [`ScreenFamilyHiddenMeta`]).
    pub fn screen_family_hidden(&self) -> Option<&ScreenFamilyHiddenMeta> {
        self.screen_family_hidden.as_ref()
    }

    /// The middle layer the screen's heads read beside the final vector (version 20 on; see
    /// [`ScreenLayerMeta`]).
    pub fn screen_layer(&self) -> Option<usize> {
        self.screen_layer.map(|l| l.layer as usize)
    }

    /// The screen layer section as stored.
    pub fn screen_layer_meta(&self) -> Option<&ScreenLayerMeta> {
        self.screen_layer.as_ref()
    }

    /// The width of a screen vector, which every head's embedding weights span: the index's
    /// width, twice it when the screen reads a middle layer too ([`ScreenLayerMeta`]).
    pub fn screen_width(&self) -> usize {
        self.dim() * if self.screen_layer.is_some() { 2 } else { 1 }
    }

    /// The language shift of tasks in another language than the catalog (version 18 on; see
    /// [`LanguageShiftMeta`]).
    pub fn language_shift(&self) -> Option<&LanguageShiftMeta> {
        self.language_shift.as_ref()
    }

    /// How many of each mode's examples ask a question, when the index has the count (version
    /// 10 on; see [`ModeQuestionsMeta`]).
    pub fn mode_questions(&self) -> Option<&ModeQuestionsMeta> {
        self.mode_questions.as_ref()
    }

    /// Each tools and skills item's content-token states, for late interaction (version 11
    /// on; see [`LateMeta`]).
    pub fn late(&self) -> Option<&LateMeta> {
        self.late.as_ref()
    }

    /// The catalog's own prompt texts (version 13 on; see [`PromptsMeta`]).
    pub fn prompts(&self) -> Option<&PromptsMeta> {
        self.prompts.as_ref()
    }

    /// The thinking modes, when the index was built from a catalog with `thinking.toml`
    /// (version 5 on); their rows are the [`SectionKind::ThinkingRows`] matrix.
    pub fn thinking(&self) -> Option<&ThinkingMeta> {
        self.thinking.as_ref()
    }

    /// The cascade's metadata, when the index was built with one.
    pub(crate) fn cascade_meta(&self) -> Option<&CascadeMeta> {
        self.cascade.as_ref()
    }

    /// The cascade's static space, when the index was built with one.
    pub fn static_space(&self) -> Option<StaticSpace<'_>> {
        let meta = self.cascade.as_ref()?;
        let rows = self.matrix(SectionKind::StaticRows);
        let n = meta.piece_ids.len();
        let t = self.matrix(SectionKind::Tools).rows();
        let s = self.matrix(SectionKind::Skills).rows();
        let m = self.matrix(SectionKind::Modes).rows();
        Some(StaticSpace {
            meta,
            pieces: rows.slice_rows(0, n),
            tools: rows.slice_rows(n, t),
            skills: rows.slice_rows(n + t, s),
            modes: rows.slice_rows(n + t + s, m),
        })
    }

    /// Number of row texts in the strings section.
    pub fn string_count(&self) -> usize {
        self.sections
            .iter()
            .find(|s| s.kind == SectionKind::StringOffsets)
            .map_or(0, |s| us(s.rows).saturating_sub(1))
    }

    /// Row text `i` (empty if out of range).
    pub fn string(&self, i: usize) -> &str {
        let bytes = self.storage.bytes();
        let (Some(text), Some(offs)) = (
            self.sections.iter().find(|s| s.kind == SectionKind::Strings),
            self.sections.iter().find(|s| s.kind == SectionKind::StringOffsets),
        ) else {
            return "";
        };
        let offs = slice(bytes, offs);
        let at = |j: usize| -> usize {
            offs.get(j * 4..j * 4 + 4)
                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        if i >= self.string_count() {
            return "";
        }
        // Bounds and UTF-8 boundaries were checked at open.
        std::str::from_utf8(&slice(bytes, text)[at(i)..at(i + 1)]).unwrap_or("")
    }

    /// The text of row `row` of a matrix.
    pub fn row_text(&self, kind: SectionKind, row: usize) -> &str {
        let Some(pos) = SectionKind::MATRICES.iter().position(|k| *k == kind) else { return "" };
        let base = self.meta.string_base.get(pos).copied().unwrap_or(0) as usize;
        self.string(base + row)
    }

    /// Recomputes every payload checksum (what `switchyard verify` runs).
    pub fn verify(&self) -> Result<()> {
        verify_payloads(&self.path, self.storage.bytes(), &self.sections, self.dim())
    }

    fn check_strings(&self) -> Result<()> {
        let bytes = self.storage.bytes();
        let text = find(&self.path, &self.sections, SectionKind::Strings)?;
        let offs = find(&self.path, &self.sections, SectionKind::StringOffsets)?;
        let bad = |problem: String| FormatError::BadSection {
            path: self.path.clone(),
            section: "string_offsets".into(),
            problem,
        };
        if offs.rows == 0 || offs.len != offs.rows * 4 {
            return Err(bad(format!("{} bytes for {} entries", offs.len, offs.rows)));
        }
        let text =
            std::str::from_utf8(slice(bytes, text)).map_err(|e| FormatError::BadSection {
                path: self.path.clone(),
                section: "strings".into(),
                problem: format!("not UTF-8: {e}"),
            })?;
        let mut prev = 0usize;
        for (j, b) in slice(bytes, offs).chunks_exact(4).enumerate() {
            let o = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
            if (j == 0 && o != 0) || o < prev || o > text.len() || !text.is_char_boundary(o) {
                return Err(bad(format!(
                    "entry {j} = {o} is not a valid boundary in {} bytes of text",
                    text.len()
                )));
            }
            prev = o;
        }
        if prev != text.len() {
            return Err(bad(format!(
                "last entry {prev} does not end the {} bytes of text",
                text.len()
            )));
        }
        Ok(())
    }
}

/// u64 file offsets to usize. Every value passed here was checked against the length of a
/// buffer in memory, so it fits; saturating keeps a logic error an out-of-range slice error.
pub(crate) fn us(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Decodes the optional metadata section `kind` with `decode`; an undecodable one is an error
/// naming the section.
fn decode_optional<T>(
    (path, bytes, sections, kind): (&PathBuf, &[u8], &[Section], SectionKind),
    decode: impl Fn(&[u8]) -> std::result::Result<T, String>,
) -> Result<Option<T>> {
    sections
        .iter()
        .find(|s| s.kind == kind)
        .map(|s| {
            decode(slice(bytes, s)).map_err(|message| FormatError::BadMeta {
                path: path.clone(),
                message: format!("{}: {message}", kind.name()),
            })
        })
        .transpose()
}

pub(crate) fn slice<'a>(bytes: &'a [u8], s: &Section) -> &'a [u8] {
    // Offsets and lengths were proven in range by `parse_sections`.
    &bytes[us(s.offset)..us(s.offset + s.len)]
}

fn find<'a>(path: &Path, sections: &'a [Section], kind: SectionKind) -> Result<&'a Section> {
    sections.iter().find(|s| s.kind == kind).ok_or_else(|| FormatError::MissingSection {
        path: path.to_path_buf(),
        section: kind.name().into(),
    })
}
