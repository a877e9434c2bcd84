//! Reading an index's header and section table, and checking its payloads: the validation
//! steps 1 to 4 of the crate docs, before any metadata is decoded.

use crate::index::{Header, Section, slice, us};
use crate::layout::{
    ALIGN, Dtype, FORMAT_VERSION, HEADER_LEN, KNOWN_FLAGS, MAGIC, MAX_SECTIONS,
    OLDEST_SUPPORTED_VERSION, SECTION_ENTRY_LEN, SectionKind, stride_for,
};
use crate::{FormatError, Result};
use std::path::Path;

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

pub(crate) fn parse_header(path: &Path, bytes: &[u8]) -> Result<Header> {
    let p = || path.to_path_buf();
    if bytes.len() < HEADER_LEN {
        return Err(FormatError::TooShort { path: p(), len: bytes.len() as u64 });
    }
    if bytes[0..8] != MAGIC {
        return Err(FormatError::BadMagic { path: p() });
    }
    let version = le_u32(bytes, 8);
    if !(OLDEST_SUPPORTED_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(FormatError::UnsupportedVersion {
            path: p(),
            found: version,
            oldest: OLDEST_SUPPORTED_VERSION,
            newest: FORMAT_VERSION,
        });
    }
    let header_len = le_u32(bytes, 12);
    if header_len as usize != HEADER_LEN {
        return Err(FormatError::BadHeaderLen { path: p(), found: header_len });
    }
    let expected = le_u32(bytes, 60);
    let found = crc32fast::hash(&bytes[0..60]);
    if expected != found {
        return Err(FormatError::HeaderCrc { path: p(), expected, found });
    }
    let flags = le_u64(bytes, 16);
    if flags & !KNOWN_FLAGS != 0 {
        return Err(FormatError::UnknownFlags { path: p(), flags });
    }
    let file_len = le_u64(bytes, 48);
    if file_len != bytes.len() as u64 {
        return Err(FormatError::FileLen {
            path: p(),
            expected: file_len,
            found: bytes.len() as u64,
        });
    }
    let section_count = le_u32(bytes, 24);
    if section_count > MAX_SECTIONS {
        return Err(FormatError::TooManySections {
            path: p(),
            count: section_count,
            max: MAX_SECTIONS,
        });
    }
    let mut fingerprint = [0u8; 16];
    fingerprint.copy_from_slice(&bytes[32..48]);
    Ok(Header { version, flags, section_count, dim: le_u32(bytes, 28), fingerprint, file_len })
}

pub(crate) fn parse_sections(path: &Path, bytes: &[u8], header: &Header) -> Result<Vec<Section>> {
    let bad = |section: String, problem: String| FormatError::BadSection {
        path: path.to_path_buf(),
        section,
        problem,
    };
    let table_end = HEADER_LEN + header.section_count as usize * SECTION_ENTRY_LEN;
    if table_end > bytes.len() {
        return Err(bad(
            "table".into(),
            format!("section table ends at {table_end}, past file length {}", bytes.len()),
        ));
    }
    if header.dim == 0 || header.dim > 65_536 {
        return Err(bad("header".into(), format!("dim {} is out of range 1..=65536", header.dim)));
    }
    let dim = header.dim as usize;
    let mut sections: Vec<Section> = Vec::with_capacity(header.section_count as usize);
    for i in 0..header.section_count as usize {
        let e =
            &bytes[HEADER_LEN + i * SECTION_ENTRY_LEN..HEADER_LEN + (i + 1) * SECTION_ENTRY_LEN];
        let code = le_u32(e, 0);
        let kind = SectionKind::from_code(code)
            .ok_or_else(|| bad(format!("#{i}"), format!("unknown kind {code}")))?;
        let name = kind.name().to_string();
        let dcode = le_u32(e, 4);
        let dtype = Dtype::from_code(dcode)
            .ok_or_else(|| bad(name.clone(), format!("unknown dtype {dcode}")))?;
        if dtype != kind.dtype() {
            return Err(bad(name, format!("dtype {dcode} does not fit this kind")));
        }
        let s = Section {
            kind,
            dtype,
            offset: le_u64(e, 8),
            len: le_u64(e, 16),
            rows: le_u64(e, 24),
            cols: le_u32(e, 32),
            stride: le_u32(e, 36),
            crc32: le_u32(e, 40),
        };
        if !s.offset.is_multiple_of(ALIGN as u64) {
            return Err(bad(name, format!("offset {} is not a multiple of {ALIGN}", s.offset)));
        }
        if us(s.offset) < table_end {
            return Err(bad(
                name,
                format!("offset {} lies inside the header or section table", s.offset),
            ));
        }
        let end = s.offset.checked_add(s.len).filter(|&end| end <= bytes.len() as u64).ok_or_else(
            || {
                bad(
                    name.clone(),
                    format!(
                        "ends at {}, past file length {}",
                        s.offset.saturating_add(s.len),
                        bytes.len()
                    ),
                )
            },
        )?;
        let _ = end;
        if e[44..].iter().any(|&b| b != 0) {
            return Err(bad(name, "reserved bytes of the table entry are not zero".into()));
        }
        if kind.is_matrix() {
            let stride = stride_for(dim) as u64;
            if s.cols as usize != dim {
                return Err(bad(name, format!("cols {} differs from header dim {dim}", s.cols)));
            }
            if u64::from(s.stride) != stride {
                return Err(bad(
                    name,
                    format!("stride {} differs from {stride} for dim {dim}", s.stride),
                ));
            }
            let want = s.rows.checked_mul(stride).and_then(|n| n.checked_mul(4));
            if want != Some(s.len) {
                return Err(bad(
                    name,
                    format!("len {} is not rows {} x stride {stride} x 4", s.len, s.rows),
                ));
            }
        } else {
            let want =
                if kind == SectionKind::StringOffsets { (s.len / 4, 1, 1) } else { (0, 0, 0) };
            if (s.rows, s.cols, s.stride) != want
                || (kind == SectionKind::StringOffsets && !s.len.is_multiple_of(4))
            {
                return Err(bad(
                    name,
                    format!(
                        "rows/cols/stride {}/{}/{} do not fit a {} byte section",
                        s.rows, s.cols, s.stride, s.len
                    ),
                ));
            }
        }
        if let Some(prev) = sections.iter().find(|p| p.kind == kind) {
            return Err(bad(prev.kind.name().into(), "appears twice".into()));
        }
        for p in &sections {
            if s.len > 0 && p.len > 0 && s.offset < p.offset + p.len && p.offset < s.offset + s.len
            {
                return Err(FormatError::Overlap {
                    path: path.to_path_buf(),
                    first: p.kind.name().into(),
                    second: name,
                });
            }
        }
        sections.push(s);
    }
    Ok(sections)
}

pub(crate) fn verify_payloads(
    path: &Path,
    bytes: &[u8],
    sections: &[Section],
    dim: usize,
) -> Result<()> {
    // Bytes outside every section (alignment gaps, table tail) are not covered by a checksum, so
    // they must be zero: then no single damaged byte anywhere can go unnoticed.
    let mut covered: Vec<(u64, u64)> =
        sections.iter().map(|s| (s.offset, s.offset + s.len)).collect();
    covered.push((0, (HEADER_LEN + sections.len() * SECTION_ENTRY_LEN) as u64));
    covered.sort_unstable();
    let mut at = 0u64;
    for (start, end) in
        covered.into_iter().chain(std::iter::once((bytes.len() as u64, bytes.len() as u64)))
    {
        if start > at && bytes[us(at)..us(start)].iter().any(|&b| b != 0) {
            return Err(FormatError::BadSection {
                path: path.to_path_buf(),
                section: "padding".into(),
                problem: format!(
                    "bytes {at}..{start} between sections are not zero; the file is damaged"
                ),
            });
        }
        at = at.max(end);
    }
    for s in sections {
        let data = slice(bytes, s);
        let found = crc32fast::hash(data);
        if found != s.crc32 {
            return Err(FormatError::PayloadCrc {
                path: path.to_path_buf(),
                section: s.kind.name().into(),
                expected: s.crc32,
                found,
            });
        }
        if s.kind.is_matrix() {
            let stride = stride_for(dim) * 4;
            for (row, r) in data.chunks_exact(stride).enumerate() {
                if r[..dim * 4]
                    .chunks_exact(4)
                    .any(|b| !f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite())
                {
                    return Err(FormatError::NonFinite {
                        path: path.to_path_buf(),
                        section: s.kind.name().into(),
                        row: row as u64,
                    });
                }
            }
        }
    }
    Ok(())
}
