//! `stages.toml`: the stages of a pipeline, what each may see and when it joins.
//!
//! ```toml
//! [[stage]]
//! name = "critic"
//! policy = "public"                    # own | public | turn
//! min_level = 1                        # joins once the stream reaches this state level
//! types = ["say", "tool_call", "result"] # message types it may see (default: all)
//! ```

use crate::{MessageType, Policy, Result, StreamError};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// One stage of the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// Unique name, `[a-z0-9_.-]+`; its messages' owner.
    pub name: String,
    /// The widest view it may ask for.
    pub policy: Policy,
    /// The stream's state level at which it joins: before, it may neither append nor view.
    pub min_level: u32,
    /// Message types it may see (its own private thoughts aside, which it always sees).
    pub types: Vec<MessageType>,
}

/// The stages of a pipeline, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stages {
    /// Where they were read from.
    pub path: PathBuf,
    /// The stages.
    pub stages: Vec<Stage>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    stage: Vec<Raw>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Spanned<String>,
    #[serde(default)]
    policy: Option<Spanned<String>>,
    #[serde(default)]
    min_level: u32,
    #[serde(default)]
    types: Option<Spanned<Vec<String>>>,
}

impl Stages {
    /// Reads and checks a stages file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| StreamError::Io { path: path.to_path_buf(), source })?;
        Self::parse(path, &text)
    }

    /// Checks the text of a stages file (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let line = |at: usize| text[..at.min(text.len())].matches('\n').count() + 1;
        let invalid = |at: usize, field: &str, message: String| StreamError::Manifest {
            path: path.to_path_buf(),
            line: line(at),
            field: field.to_string(),
            message,
        };
        let file: File = toml::from_str(text).map_err(|e| StreamError::Manifest {
            path: path.to_path_buf(),
            line: e.span().map_or(1, |s| line(s.start)),
            field: "(syntax)".into(),
            message: e.message().trim().to_string(),
        })?;
        if file.stage.is_empty() {
            return Err(invalid(0, "stage", "no [[stage]] entries; define at least one".into()));
        }
        let mut stages: Vec<Stage> = Vec::new();
        for raw in file.stage {
            let name = raw.name.get_ref().clone();
            let at = raw.name.span().start;
            let ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b));
            if !ok {
                return Err(invalid(
                    at,
                    "stage.name",
                    format!(
                        "{name:?} is not allowed; use lowercase letters, digits, `_`, `.` and `-`"
                    ),
                ));
            }
            if stages.iter().any(|s| s.name == name) {
                return Err(invalid(
                    at,
                    "stage.name",
                    format!("{name:?} is defined twice; names must be unique"),
                ));
            }
            let policy = match &raw.policy {
                None => Policy::Public,
                Some(p) => {
                    p.get_ref().parse().map_err(|m| invalid(p.span().start, "stage.policy", m))?
                }
            };
            let types = match &raw.types {
                None => MessageType::ALL.to_vec(),
                Some(t) => t
                    .get_ref()
                    .iter()
                    .map(|x| x.parse::<MessageType>())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|m| invalid(t.span().start, "stage.types", m))?,
            };
            stages.push(Stage { name, policy, min_level: raw.min_level, types });
        }
        Ok(Self { path: path.to_path_buf(), stages })
    }

    /// A stage by name, or an error listing the defined ones.
    pub fn get(&self, name: &str) -> Result<&Stage> {
        self.stages.iter().find(|s| s.name == name).ok_or_else(|| StreamError::Refused {
            stage: name.to_string(),
            reason: format!(
                "no such stage in {} (defined: {})",
                self.path.display(),
                self.stages.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })
    }
}
