//! Constants and section kinds of the on-disk layout.

/// The first 8 bytes of every index.
pub const MAGIC: [u8; 8] = *b"SWYDIDX\0";
/// The version this build writes.
pub const FORMAT_VERSION: u32 = 22;
/// The oldest version this build reads.
pub const OLDEST_SUPPORTED_VERSION: u32 = 1;
/// Every section starts on a multiple of this many bytes.
pub const ALIGN: usize = 64;
/// Size of the header.
pub const HEADER_LEN: usize = 64;
/// Size of one section table entry.
pub const SECTION_ENTRY_LEN: usize = 64;
/// Upper bound on the section count, checked before the table is read.
pub const MAX_SECTIONS: u32 = 64;
/// Header flag: matrix rows are L2-normalised.
pub const FLAG_ROWS_NORMALISED: u64 = 1;
/// All flags this build knows.
pub const KNOWN_FLAGS: u64 = FLAG_ROWS_NORMALISED;

/// What a section holds. Codes are stable on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SectionKind {
    /// f32 rows: tool descriptions and examples.
    Tools,
    /// f32 rows: skill descriptions and examples.
    Skills,
    /// f32 rows: mode descriptions and examples.
    Modes,
    /// f32 rows: known injection patterns.
    Injections,
    /// f32 rows: benign look-alikes of injection patterns.
    Benign,
    /// UTF-8 bytes of every row text, concatenated.
    Strings,
    /// u32 offsets into `Strings`: `n + 1` entries for `n` strings.
    StringOffsets,
    /// bincode-encoded [`crate::IndexMeta`].
    Meta,
    /// f32 rows of the static (cascade) embedding space: the distilled word pieces, then one
    /// row per tools, skills and modes row, in that order (optional; version 2 on).
    StaticRows,
    /// bincode-encoded [`crate::CascadeMeta`]: piece ids, weights and static thresholds
    /// (present exactly when `StaticRows` is; version 2 on).
    Cascade,
    /// bincode-encoded [`crate::SelectionMeta`]: the lexical statistics of tools and skills,
    /// the fusion weight, the selection gates and the mode step's calibration (optional;
    /// version 3 on).
    Selection,
    /// bincode-encoded [`crate::ScreenMeta`]: the learned injection screen (a logistic head
    /// over the embedding and the nearest-pattern scores), its threshold and how untrusted
    /// text is cut into windows (optional; version 4 on).
    Screen,
    /// bincode-encoded [`crate::AdapterMeta`]: the query adapter the tools and skills rows were
    /// mapped with, which the router applies to the task vector (optional; version 4 on).
    Adapter,
    /// f32 rows of the thinking modes: each mode's card, then its examples (optional; version
    /// 5 on; present exactly when `Thinking` is).
    ThinkingRows,
    /// bincode-encoded [`crate::ThinkingMeta`]: the thinking modes, their keyword rules,
    /// scaffolds and the semantic fallback's calibration (optional; version 5 on).
    Thinking,
    /// bincode-encoded [`crate::LexicalScreenMeta`]: the screen's lexical head over hashed
    /// n-grams, added to the embedding head (optional; version 6 on; only beside `Screen`).
    ScreenLexical,
    /// bincode-encoded [`crate::QueryShiftMeta`]: per tools and skills row, how much of its
    /// score any request gets (the row against the centroid of ordinary requests), subtracted
    /// from the task's score (optional; version 7 on; only beside `Selection`).
    QueryShift,
    /// bincode-encoded [`crate::ScreenTriageMeta`]: the lexical logit under which a window is
    /// cleared without being embedded (optional; version 8 on; only beside `ScreenLexical`).
    ScreenTriage,
    /// bincode-encoded [`crate::ScreenFamiliesMeta`]: heads trained on one family of attacks
    /// each, beside the main head (optional; version 9 on; only beside `Screen`).
    ScreenFamilies,
    /// bincode-encoded [`crate::ModeQuestionsMeta`]: how many of each mode's examples ask a
    /// question (optional; version 10 on; only beside `Selection`).
    ModeQuestions,
    /// bincode-encoded [`crate::LateMeta`]: the content-token states of each tools and skills
    /// item, for late interaction (optional; version 11 on; only beside `Selection`).
    Late,
    /// bincode-encoded [`crate::LateIdsMeta`]: the token id of each state in `Late`, so the
    /// router can weigh an item's own tokens (optional; version 12 on; only beside `Late`).
    LateIds,
    /// bincode-encoded [`crate::PromptsMeta`]: the catalog's own prompt texts (its
    /// constitution), so an assembly uses the ones of the catalog the index was built from
    /// (optional; version 13 on).
    Prompts,
    /// bincode-encoded [`crate::ScreenRequestMeta`]: the request contrast, which flags an
    /// entry whose one window reads as a request among windows that read as a document
    /// (optional; version 14 on; only beside `Screen`).
    ScreenRequest,
    /// bincode-encoded [`crate::OffTopicMeta`]: general topics a task may be nearer to than to
    /// any of the catalog's items (optional; version 16 on; only beside `Selection`).
    OffTopic,
    /// bincode-encoded [`crate::LanguageShiftMeta`]: the centroid of ordinary requests per
    /// language and the catalog's language, so a task in another language than the catalog is
    /// moved towards it before the tools are scored (optional; version 18 on; only beside
    /// `Selection`).
    LanguageShift,
    /// bincode-encoded [`crate::ScreenFamilyHiddenMeta`]: the hidden layers of the screen's
    /// family heads (optional; version 19 on; only beside `ScreenFamilies`).
    ScreenFamilyHidden,
    /// bincode-encoded [`crate::ScreenLayerMeta`]: the middle layer of the model the screen's
    /// heads read beside the final vector (optional; version 20 on; only beside `Screen`).
    ScreenLayer,
}

impl SectionKind {
    /// Every kind in file order.
    pub const ALL: [SectionKind; 28] = [
        SectionKind::Tools,
        SectionKind::Skills,
        SectionKind::Modes,
        SectionKind::Injections,
        SectionKind::Benign,
        SectionKind::Strings,
        SectionKind::StringOffsets,
        SectionKind::Meta,
        SectionKind::StaticRows,
        SectionKind::Cascade,
        SectionKind::Selection,
        SectionKind::Screen,
        SectionKind::Adapter,
        SectionKind::ThinkingRows,
        SectionKind::Thinking,
        SectionKind::ScreenLexical,
        SectionKind::QueryShift,
        SectionKind::ScreenTriage,
        SectionKind::ScreenFamilies,
        SectionKind::ModeQuestions,
        SectionKind::Late,
        SectionKind::LateIds,
        SectionKind::Prompts,
        SectionKind::ScreenRequest,
        SectionKind::OffTopic,
        SectionKind::LanguageShift,
        SectionKind::ScreenFamilyHidden,
        SectionKind::ScreenLayer,
    ];

    /// The matrix kinds.
    pub const MATRICES: [SectionKind; 5] = [
        SectionKind::Tools,
        SectionKind::Skills,
        SectionKind::Modes,
        SectionKind::Injections,
        SectionKind::Benign,
    ];

    /// On-disk code.
    pub fn code(self) -> u32 {
        match self {
            SectionKind::Tools => 1,
            SectionKind::Skills => 2,
            SectionKind::Modes => 3,
            SectionKind::Injections => 4,
            SectionKind::Benign => 5,
            SectionKind::Strings => 6,
            SectionKind::StringOffsets => 7,
            SectionKind::Meta => 8,
            SectionKind::StaticRows => 9,
            SectionKind::Cascade => 10,
            SectionKind::Selection => 11,
            SectionKind::Screen => 12,
            SectionKind::Adapter => 13,
            SectionKind::ThinkingRows => 14,
            SectionKind::Thinking => 15,
            SectionKind::ScreenLexical => 16,
            SectionKind::QueryShift => 17,
            SectionKind::ScreenTriage => 18,
            SectionKind::ScreenFamilies => 19,
            SectionKind::ModeQuestions => 20,
            SectionKind::Late => 21,
            SectionKind::LateIds => 22,
            SectionKind::Prompts => 23,
            SectionKind::ScreenRequest => 24,
            SectionKind::OffTopic => 25,
            SectionKind::LanguageShift => 26,
            SectionKind::ScreenFamilyHidden => 27,
            SectionKind::ScreenLayer => 28,
        }
    }

    /// Parses an on-disk code.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// Lowercase name, as used in messages and `switchyard inspect`.
    pub fn name(self) -> &'static str {
        match self {
            SectionKind::Tools => "tools",
            SectionKind::Skills => "skills",
            SectionKind::Modes => "modes",
            SectionKind::Injections => "injections",
            SectionKind::Benign => "benign",
            SectionKind::Strings => "strings",
            SectionKind::StringOffsets => "string_offsets",
            SectionKind::Meta => "meta",
            SectionKind::StaticRows => "static_rows",
            SectionKind::Cascade => "cascade",
            SectionKind::Selection => "selection",
            SectionKind::Screen => "screen",
            SectionKind::Adapter => "adapter",
            SectionKind::ThinkingRows => "thinking_rows",
            SectionKind::Thinking => "thinking",
            SectionKind::ScreenLexical => "screen_lexical",
            SectionKind::QueryShift => "query_shift",
            SectionKind::ScreenTriage => "screen_triage",
            SectionKind::ScreenFamilies => "screen_families",
            SectionKind::ModeQuestions => "mode_questions",
            SectionKind::Late => "late",
            SectionKind::LateIds => "late_ids",
            SectionKind::Prompts => "prompts",
            SectionKind::ScreenRequest => "screen_request",
            SectionKind::OffTopic => "off_topic",
            SectionKind::LanguageShift => "language_shift",
            SectionKind::ScreenFamilyHidden => "screen_family_hidden",
            SectionKind::ScreenLayer => "screen_layer",
        }
    }

    /// The element type this kind must have.
    pub fn dtype(self) -> Dtype {
        match self {
            SectionKind::Strings
            | SectionKind::Meta
            | SectionKind::Cascade
            | SectionKind::Selection
            | SectionKind::Screen
            | SectionKind::Adapter
            | SectionKind::Thinking
            | SectionKind::ScreenLexical
            | SectionKind::QueryShift
            | SectionKind::ScreenTriage
            | SectionKind::ScreenFamilies
            | SectionKind::ModeQuestions
            | SectionKind::Late
            | SectionKind::LateIds
            | SectionKind::Prompts
            | SectionKind::ScreenRequest
            | SectionKind::OffTopic
            | SectionKind::LanguageShift
            | SectionKind::ScreenFamilyHidden
            | SectionKind::ScreenLayer => Dtype::U8,
            SectionKind::StringOffsets => Dtype::U32,
            _ => Dtype::F32,
        }
    }

    /// Whether this kind is an f32 matrix.
    pub fn is_matrix(self) -> bool {
        self.dtype() == Dtype::F32
    }
}

/// Element type of a section. Codes are stable on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dtype {
    /// Little-endian f32.
    F32,
    /// Bytes.
    U8,
    /// Little-endian u32.
    U32,
}

impl Dtype {
    /// On-disk code.
    pub fn code(self) -> u32 {
        match self {
            Dtype::F32 => 1,
            Dtype::U8 => 2,
            Dtype::U32 => 3,
        }
    }

    /// Parses an on-disk code.
    pub fn from_code(code: u32) -> Option<Self> {
        [Dtype::F32, Dtype::U8, Dtype::U32].into_iter().find(|d| d.code() == code)
    }
}

/// Floats per stored row: `dim` rounded up to 16, so every row starts on a 64-byte boundary.
pub fn stride_for(dim: usize) -> usize {
    dim.div_ceil(16) * 16
}

/// Rounds `n` up to [`ALIGN`].
pub fn align_up(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}
