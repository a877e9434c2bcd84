//! The store's tables and the migrations of stores written by earlier versions, run at open.

use rusqlite::{Connection, params};

/// Creates the tables a new store needs and brings an older store's up to date: columns added
/// since (each with the value an old row means), and the text hash that finds an entry already
/// stored without reading every text.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS entries (
             id INTEGER PRIMARY KEY AUTOINCREMENT,
             kind TEXT NOT NULL,
             text TEXT NOT NULL,
             created_at INTEGER NOT NULL,
             source TEXT NOT NULL,
             embedding BLOB NOT NULL,
             fingerprint TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS pieces (
             entry_id INTEGER NOT NULL,
             seq INTEGER NOT NULL,
             start INTEGER NOT NULL,
             end INTEGER NOT NULL,
             origin TEXT NOT NULL,
             embedding BLOB NOT NULL,
             PRIMARY KEY (entry_id, seq)
         );",
    )?;
    conn.execute_batch(crate::verdicts::VERDICTS_TABLE)?;
    let has = |name: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT count(*) FROM pragma_table_info('entries') WHERE name = ?1",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
    };
    // Stores from before pieces existed: their rows read as unprepared (NULL) until `reembed`.
    if !has("prepare_version")? {
        conn.execute_batch("ALTER TABLE entries ADD COLUMN prepare_version INTEGER")?;
    }
    // Stores from before hit counts and rules: every entry starts at 0 hits, unproven.
    if !has("hits")? {
        conn.execute_batch(
            "ALTER TABLE entries ADD COLUMN hits INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE entries ADD COLUMN proven INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    // Stores from before named stores: every entry is in the default store.
    if !has("store")? {
        conn.execute_batch("ALTER TABLE entries ADD COLUMN store TEXT NOT NULL DEFAULT 'memory'")?;
    }
    // Stores from before the text hash: `add` looked for the same text by reading every
    // entry's text, a cost that grew with the store.
    if !has("text_sha256")? {
        conn.execute_batch("ALTER TABLE entries ADD COLUMN text_sha256 TEXT")?;
    }
    // Stores from before the screen read a middle layer: their entries carry none (NULL) and
    // are embedded again by an index that reads one until `reembed` stores its vectors.
    if !has("screen_layer")? {
        conn.execute_batch(
            "ALTER TABLE entries ADD COLUMN screen_layer INTEGER;
             ALTER TABLE entries ADD COLUMN middle BLOB;
             ALTER TABLE pieces ADD COLUMN middle BLOB;",
        )?;
    }
    // Every assembly reads the operator's rules, and `memory read` one named store: a few
    // rows among many.
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS entries_by_text ON entries (text_sha256, store, kind);
         CREATE INDEX IF NOT EXISTS entries_by_kind ON entries (kind);
         CREATE INDEX IF NOT EXISTS entries_by_store ON entries (store);",
    )?;
    hash_unhashed_texts(conn)
}

/// The hex sha256 of an entry's text, as the `text_sha256` column holds it.
pub(crate) fn text_sha256(text: &str) -> String {
    switchyard_embed::sha256_hex(text.as_bytes())
}

/// Fills the text hash of rows that have none (rows of a store from before the column, or
/// written by an older version since), through the index, so a store whose rows all have one
/// pays nothing.
fn hash_unhashed_texts(conn: &Connection) -> rusqlite::Result<()> {
    let unhashed: Vec<(i64, String)> = {
        let mut st = conn.prepare("SELECT id, text FROM entries WHERE text_sha256 IS NULL")?;
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?
    };
    if unhashed.is_empty() {
        return Ok(());
    }
    let tx = conn.unchecked_transaction()?;
    for (id, text) in &unhashed {
        tx.execute(
            "UPDATE entries SET text_sha256 = ?1 WHERE id = ?2",
            params![text_sha256(text), id],
        )?;
    }
    tx.commit()?;
    tracing::info!(entries = unhashed.len(), "memory: text hashes filled in");
    Ok(())
}
