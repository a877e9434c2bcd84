//! Switchyard's store of untrusted memory and activity entries (work in progress: see the
//! open issue for the SQLite store).
#![deny(missing_docs)]
