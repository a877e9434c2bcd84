//! Reading entries back from the database: whole entries with their pieces (all of them, those
//! written since a cache last looked, or a few by id), and the vectors search scans.

use crate::cache::SearchRow;
use crate::{Entry, INSTRUCTION_KINDS, MemoryError, Preparation, Result, StoredPiece};
use rusqlite::{Connection, Params};
use std::path::Path;
use switchyard_untrusted::Origin;

/// The entries `filter` (a condition on the `entries` table, its parameters `params`) selects,
/// ascending by id, each with its stored pieces.
pub(crate) fn read_entries<P: Params + Clone>(
    conn: &Connection,
    path: &Path,
    filter: &str,
    params: P,
) -> Result<Vec<Entry>> {
    let sql = |source| MemoryError::Sqlite { path: path.to_path_buf(), source };
    let mut st = conn
        .prepare(&format!(
            "SELECT id, kind, text, created_at, source, embedding, prepare_version, hits, proven, store, screen_layer, middle FROM entries WHERE {filter} ORDER BY id"
        ))
        .map_err(sql)?;
    let rows = st
        .query_map(params.clone(), |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, Vec<u8>>(5)?,
                r.get::<_, Option<i64>>(6)?,
                r.get::<_, i64>(7)?,
                r.get::<_, bool>(8)?,
                r.get::<_, String>(9)?,
                r.get::<_, Option<i64>>(10)?,
                r.get::<_, Option<Vec<u8>>>(11)?,
            ))
        })
        .map_err(sql)?;
    let mut out = Vec::new();
    for row in rows {
        let (
            id,
            kind,
            text,
            created_at,
            source,
            blob,
            prepare_version,
            hits,
            proven,
            store,
            screen_layer,
            middle,
        ) = row.map_err(sql)?;
        let prepare_version = prepare_version.and_then(|v| u32::try_from(v).ok());
        out.push(Entry {
            preparation: Preparation::of(prepare_version, &text),
            id,
            kind,
            store,
            text,
            created_at,
            source,
            embedding: floats(path, id, &blob)?,
            middle: floats(path, id, middle.as_deref().unwrap_or_default())?,
            screen_layer: screen_layer.and_then(|l| u32::try_from(l).ok()),
            prepare_version,
            pieces: Vec::new(),
            hits: u32::try_from(hits).unwrap_or(0),
            proven,
        });
    }
    drop(st);
    if !out.is_empty() {
        attach_pieces(conn, path, &mut out, filter, params)?;
    }
    Ok(out)
}

/// The entries whose ids are in `ids` (those that exist), ascending by id, with their pieces.
pub(crate) fn read_entries_with_ids(
    conn: &Connection,
    path: &Path,
    ids: &[i64],
) -> Result<Vec<Entry>> {
    let mut wanted = ids.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut out = Vec::with_capacity(wanted.len());
    // Well under SQLite's limit on a statement's parameters.
    for chunk in wanted.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(", ");
        out.extend(read_entries(
            conn,
            path,
            &format!("id IN ({marks})"),
            rusqlite::params_from_iter(chunk.iter()),
        )?);
    }
    Ok(out)
}

/// What search scans of the entries whose id is over `after`, oldest first: no text, no pieces.
pub(crate) fn read_search_rows(
    conn: &Connection,
    path: &Path,
    after: i64,
) -> Result<Vec<SearchRow>> {
    let sql = |source| MemoryError::Sqlite { path: path.to_path_buf(), source };
    let mut st = conn
        .prepare("SELECT id, kind, embedding FROM entries WHERE id > ?1 ORDER BY id")
        .map_err(sql)?;
    let rows = st
        .query_map([after], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, Vec<u8>>(2)?))
        })
        .map_err(sql)?;
    let mut out = Vec::new();
    for row in rows {
        let (id, kind, blob) = row.map_err(sql)?;
        out.push(SearchRow {
            id,
            instruction_like: INSTRUCTION_KINDS.contains(&kind.as_str()),
            embedding: floats(path, id, &blob)?,
        });
    }
    Ok(out)
}

/// A little-endian f32 blob as floats; a length that is not whole floats is corruption.
pub(crate) fn floats(path: &Path, id: i64, blob: &[u8]) -> Result<Vec<f32>> {
    if !blob.len().is_multiple_of(4) {
        return Err(MemoryError::Corrupt {
            path: path.to_path_buf(),
            id,
            problem: format!("embedding blob of {} bytes", blob.len()),
        });
    }
    Ok(blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// Attaches the stored pieces of the entries `filter` selects to `entries` (ascending by id).
fn attach_pieces<P: Params>(
    conn: &Connection,
    path: &Path,
    entries: &mut [Entry],
    filter: &str,
    params: P,
) -> Result<()> {
    let sql = |source| MemoryError::Sqlite { path: path.to_path_buf(), source };
    let mut st = conn
        .prepare(&format!(
            "SELECT entry_id, start, end, origin, embedding, middle FROM pieces WHERE entry_id IN (SELECT id FROM entries WHERE {filter}) ORDER BY entry_id, seq"
        ))
        .map_err(sql)?;
    let rows = st
        .query_map(params, |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Vec<u8>>(4)?,
                r.get::<_, Option<Vec<u8>>>(5)?,
            ))
        })
        .map_err(sql)?;
    for row in rows {
        let (id, start, end, origin, blob, middle) = row.map_err(sql)?;
        let Ok(at) = entries.binary_search_by_key(&id, |e| e.id) else { continue };
        let corrupt =
            |problem: String| MemoryError::Corrupt { path: path.to_path_buf(), id, problem };
        let origin = Origin::parse(&origin)
            .ok_or_else(|| corrupt(format!("piece origin {origin:?} is not known")))?;
        let len = entries[at].text.len() as i64;
        if start < 0 || end < start || end > len {
            return Err(corrupt(format!("piece range {start}..{end} is outside the text")));
        }
        let embedding = floats(path, id, &blob)?;
        entries[at].pieces.push(StoredPiece {
            start: start as usize,
            end: end as usize,
            origin,
            embedding,
            middle: floats(path, id, middle.as_deref().unwrap_or_default())?,
        });
    }
    Ok(())
}
