use std::path::PathBuf;

/// Why an index file was refused. Every message names the file and ends with what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file could not be read or written.
    #[error("index {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Shorter than the 64-byte header.
    #[error(
        "index {path}: file is {len} bytes, shorter than the 64-byte header; rebuild it with switchyard build-index"
    )]
    TooShort {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
    },
    /// The first 8 bytes are not `SWYDIDX\0`.
    #[error(
        "index {path}: not a switchyard index (bad magic); pass a file written by switchyard build-index"
    )]
    BadMagic {
        /// The file.
        path: PathBuf,
    },
    /// Written by a format version this build cannot read.
    #[error(
        "index {path}: format version {found} is not supported (this build reads {oldest}..={newest}); rebuild it with switchyard build-index"
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Oldest readable version.
        oldest: u32,
        /// Newest readable version.
        newest: u32,
    },
    /// The header length field is not 64.
    #[error(
        "index {path}: header_len is {found}, expected 64; rebuild it with switchyard build-index"
    )]
    BadHeaderLen {
        /// The file.
        path: PathBuf,
        /// The value found.
        found: u32,
    },
    /// The header checksum does not match.
    #[error(
        "index {path}: header crc32 {found:08x} does not match {expected:08x}; the file is damaged, rebuild it with switchyard build-index"
    )]
    HeaderCrc {
        /// The file.
        path: PathBuf,
        /// Stored checksum.
        expected: u32,
        /// Computed checksum.
        found: u32,
    },
    /// Flags carry bits this build does not know.
    #[error(
        "index {path}: unknown header flags {flags:#x}; rebuild it with switchyard build-index"
    )]
    UnknownFlags {
        /// The file.
        path: PathBuf,
        /// The flags.
        flags: u64,
    },
    /// The recorded length differs from the real one (truncated or appended to).
    #[error(
        "index {path}: header says {expected} bytes but the file has {found}; the file is truncated or damaged, rebuild it with switchyard build-index"
    )]
    FileLen {
        /// The file.
        path: PathBuf,
        /// Length in the header.
        expected: u64,
        /// Actual length.
        found: u64,
    },
    /// More sections than any valid index has.
    #[error(
        "index {path}: {count} sections exceeds the limit of {max}; rebuild it with switchyard build-index"
    )]
    TooManySections {
        /// The file.
        path: PathBuf,
        /// Count in the header.
        count: u32,
        /// The limit.
        max: u32,
    },
    /// A section table entry is malformed.
    #[error("index {path}: section {section}: {problem}; rebuild it with switchyard build-index")]
    BadSection {
        /// The file.
        path: PathBuf,
        /// The section (kind name or table position).
        section: String,
        /// What is wrong, with the numbers.
        problem: String,
    },
    /// Two sections share bytes.
    #[error(
        "index {path}: sections {first} and {second} overlap; rebuild it with switchyard build-index"
    )]
    Overlap {
        /// The file.
        path: PathBuf,
        /// One section.
        first: String,
        /// The other.
        second: String,
    },
    /// A section's payload checksum does not match.
    #[error(
        "index {path}: section {section} crc32 {found:08x} does not match {expected:08x}; the file is damaged, rebuild it with switchyard build-index"
    )]
    PayloadCrc {
        /// The file.
        path: PathBuf,
        /// The section.
        section: String,
        /// Stored checksum.
        expected: u32,
        /// Computed checksum.
        found: u32,
    },
    /// A matrix holds NaN or infinity.
    #[error(
        "index {path}: section {section} row {row} holds a non-finite value; rebuild it with switchyard build-index"
    )]
    NonFinite {
        /// The file.
        path: PathBuf,
        /// The section.
        section: String,
        /// The row.
        row: u64,
    },
    /// A required section is absent.
    #[error("index {path}: section {section} is missing; rebuild it with switchyard build-index")]
    MissingSection {
        /// The file.
        path: PathBuf,
        /// The section.
        section: String,
    },
    /// The metadata section cannot be decoded.
    #[error(
        "index {path}: metadata does not decode ({message}); rebuild it with switchyard build-index"
    )]
    BadMeta {
        /// The file.
        path: PathBuf,
        /// The decoder's message.
        message: String,
    },
    /// The writer was given inconsistent input.
    #[error("cannot write index: {0}")]
    InvalidInput(String),
}

/// The result type of this crate.
pub type Result<T, E = FormatError> = std::result::Result<T, E>;
