//! `off_topic.toml`: what a catalog says about the off-topic check, which gives no tool to a
//! task nearer to a general topic (jokes, trivia, homework help, ...) than to any of the
//! catalog's tools and skills.
//!
//! The builder leaves out the topics it measures the catalog to serve, but a topic's card is
//! broad ("homework help: explain a school subject or solve a maths exercise") and a tool that
//! serves one corner of it (a calculator) may never come nearer to it than the other topics
//! do. The catalog's author knows better, and says so here:
//!
//! ```toml
//! # General topics this catalog serves (names as `switchyard inspect` lists them): a task
//! # about them is never closed as off-topic.
//! serves = ["homework help", "word meanings"]
//! # Or no off-topic check at all for this catalog.
//! # check = false
//! ```
//!
//! This crate reads the file; the builder, which knows the topics, checks each name and names
//! this file, its line and the known topics when one is not a topic.

use crate::catalog::{Source, read};
use crate::{ManifestError, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use toml::Spanned;

/// The file's name in a manifest folder.
pub const OFF_TOPIC_FILE: &str = "off_topic.toml";

/// One topic the catalog declares it serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServedTopic {
    /// The topic's name, trimmed and lowercased.
    pub name: String,
    /// Its line in the file, for errors.
    #[serde(skip)]
    pub line: usize,
}

/// What the catalog says about the off-topic check; the default (no file) leaves it to the
/// builder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffTopicSettings {
    /// Whether the index gets the check at all (`check = false` turns it off).
    pub check: bool,
    /// General topics the catalog serves, in file order: never closed as off-topic.
    pub serves: Vec<ServedTopic>,
    /// The file they came from (`None` without one).
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

impl Default for OffTopicSettings {
    fn default() -> Self {
        Self { check: true, serves: Vec::new(), path: None }
    }
}

impl OffTopicSettings {
    /// Whether these are the settings of a folder without the file (nothing declared).
    pub fn is_default(&self) -> bool {
        self.check && self.serves.is_empty()
    }

    /// The error for a declared topic the builder does not know, naming the file, the line,
    /// the field and the topics it knows.
    pub fn unknown_topic(&self, topic: &ServedTopic, known: &[&str]) -> ManifestError {
        ManifestError::Invalid {
            path: self.path.clone().unwrap_or_else(|| PathBuf::from(OFF_TOPIC_FILE)),
            line: topic.line,
            field: "serves".into(),
            message: format!(
                "{:?} is not one of the general topics; use one of: {}",
                topic.name,
                known.join(", ")
            ),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    check: Option<bool>,
    #[serde(default)]
    serves: Vec<Spanned<String>>,
}

/// Reads `dir/off_topic.toml`; the default settings when the folder has none.
pub(crate) fn load(dir: &std::path::Path) -> Result<OffTopicSettings> {
    let Some(src) = read(dir, OFF_TOPIC_FILE)? else { return Ok(OffTopicSettings::default()) };
    parse(&src)
}

fn parse(src: &Source) -> Result<OffTopicSettings> {
    let file: File = src.parse()?;
    if file.check.is_none() && file.serves.is_empty() {
        return Err(ManifestError::Invalid {
            path: src.path.clone(),
            line: 1,
            field: "(file)".into(),
            message: "says nothing; list the general topics the catalog serves \
                      (`serves = [\"homework help\"]`), set `check = false`, or delete the file"
                .into(),
        });
    }
    let mut serves: Vec<ServedTopic> = Vec::new();
    for s in &file.serves {
        let name = s.get_ref().trim().to_lowercase();
        if name.is_empty() {
            return Err(src.invalid(
                s.span(),
                "serves",
                "an empty topic name; write a general topic's name as `switchyard inspect` lists it",
            ));
        }
        // A name listed twice says nothing more; keep the first.
        if !serves.iter().any(|t| t.name == name) {
            serves.push(ServedTopic { name, line: src.line(s.span()) });
        }
    }
    Ok(OffTopicSettings { check: file.check.unwrap_or(true), serves, path: Some(src.path.clone()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> Result<OffTopicSettings> {
        parse(&Source::new(PathBuf::from("cat/off_topic.toml"), text.to_string()))
    }

    #[test]
    fn served_topics_are_read_trimmed_lowercased_once_each_with_their_lines() {
        let s = settings(
            "serves = [\n  \"Homework help\",\n  \" word meanings \",\n  \"homework help\",\n]\n",
        )
        .unwrap();
        assert!(s.check);
        let names: Vec<(&str, usize)> =
            s.serves.iter().map(|t| (t.name.as_str(), t.line)).collect();
        assert_eq!(names, [("homework help", 2), ("word meanings", 3)]);
        assert!(!s.is_default());
    }

    #[test]
    fn the_check_can_be_turned_off() {
        let s = settings("check = false\n").unwrap();
        assert!(!s.check && s.serves.is_empty() && !s.is_default());
    }

    #[test]
    fn a_file_that_says_nothing_an_empty_name_or_an_unknown_key_is_refused_with_its_line() {
        let e = settings("# nothing\n").unwrap_err().to_string();
        assert!(e.contains("cat/off_topic.toml:1") && e.contains("says nothing"), "{e}");
        let e = settings("serves = [\"jokes\",\n \"  \"]\n").unwrap_err().to_string();
        assert!(e.contains("off_topic.toml:2: serves: an empty topic name"), "{e}");
        let e = settings("serve = [\"jokes\"]\n").unwrap_err().to_string();
        assert!(e.contains("off_topic.toml:1") && e.contains("serve"), "{e}");
    }

    #[test]
    fn an_unknown_topic_is_named_with_its_line_and_the_known_topics() {
        let s = settings("serves = [\"jokes\", \"maths\"]\n").unwrap();
        let e = s.unknown_topic(&s.serves[1], &["jokes", "homework help"]).to_string();
        assert_eq!(
            e,
            "cat/off_topic.toml:1: serves: \"maths\" is not one of the general topics; use one of: jokes, homework help"
        );
    }
}
