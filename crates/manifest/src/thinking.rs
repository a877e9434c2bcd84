//! `thinking.toml`: thinking modes (council, red_team, ...), each a scaffold an agent follows to
//! think through a problem, chosen by keyword rules, an explicit choice, an optional semantic
//! fallback or the declared default.

use crate::catalog::{Source, clean_list, non_empty, read_relative, unique};
use crate::{ManifestError, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

/// Where a scaffold takes the problem.
pub const PROBLEM_PLACEHOLDER: &str = "{problem}";
/// The heading every scaffold ends with.
pub const CRITERIA_HEADING: &str = "Success Criteria";
/// How many checkable items a scaffold's Success Criteria list holds.
pub const CRITERIA_RANGE: std::ops::RangeInclusive<usize> = 3..=5;

/// A thinking mode: a way to think a problem through.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThinkingMode {
    /// Unique id.
    pub name: String,
    /// What the mode is for.
    pub description: String,
    /// Keyword rules (any language; a trailing `*` matches a word's inflections).
    pub keywords: Vec<String>,
    /// Problems typical of the mode, for the semantic fallback.
    pub examples: Vec<String>,
    /// The scaffold text, with [`PROBLEM_PLACEHOLDER`] where the problem goes.
    pub scaffold: String,
    /// The scaffold's Success Criteria items, in order.
    pub criteria: Vec<String>,
    /// Whether this mode decides when nothing else does.
    pub default: bool,
}

impl ThinkingMode {
    /// The scaffold with the problem filled in.
    pub fn render(&self, problem: &str) -> String {
        self.scaffold.replace(PROBLEM_PLACEHOLDER, problem.trim())
    }

    /// Texts embedded for the semantic fallback: `name: description`, then the examples.
    pub fn texts(&self) -> Vec<String> {
        std::iter::once(format!("{}: {}", self.name.replace('_', " "), self.description))
            .chain(self.examples.iter().cloned())
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThinkingFile {
    #[serde(default)]
    thinking: Vec<RawThinking>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawThinking {
    name: Spanned<String>,
    description: Spanned<String>,
    scaffold: Spanned<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    default: Option<Spanned<bool>>,
}

/// Parses and validates `thinking.toml` (already read into `src`), sorted by name.
pub(crate) fn load(src: &Source, dir: &Path) -> Result<Vec<ThinkingMode>> {
    let file: ThinkingFile = src.parse()?;
    let mut seen = BTreeMap::new();
    let mut default_at: Option<(String, usize)> = None;
    let mut out = Vec::new();
    for t in file.thinking {
        let name = unique(src, &mut seen, &t.name, "thinking.name")?;
        if let Some(d) = t.default.as_ref().filter(|d| *d.get_ref()) {
            if let Some((other, line)) = &default_at {
                return Err(src.invalid(
                    d.span(),
                    "thinking.default",
                    format!("{other} (line {line}) is already the default thinking mode; mark only one `default = true`"),
                ));
            }
            default_at = Some((name.clone(), src.line(d.span())));
        }
        let scaffold = read_relative(src, dir, &t.scaffold, "thinking.scaffold")?;
        let scaffold_path = dir.join(t.scaffold.get_ref());
        let criteria = check_scaffold(&scaffold_path, &scaffold)?;
        out.push(ThinkingMode {
            description: non_empty(src, &t.description, "thinking.description")?,
            keywords: clean_list(t.keywords).into_iter().map(|k| k.to_lowercase()).collect(),
            examples: clean_list(t.examples),
            scaffold,
            criteria,
            default: t.default.is_some_and(|d| *d.get_ref()),
            name,
        });
    }
    if out.is_empty() {
        return Err(ManifestError::Invalid {
            path: src.path.clone(),
            line: 1,
            field: "thinking".into(),
            message: "no [[thinking]] entries; add at least one or remove the file".into(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// A scaffold takes the problem once or more, and ends in a Success Criteria list of 3-5 items.
/// Returns the items.
fn check_scaffold(path: &Path, text: &str) -> Result<Vec<String>> {
    let invalid = |line: usize, message: String| ManifestError::Invalid {
        path: path.to_path_buf(),
        line,
        field: "thinking.scaffold".into(),
        message,
    };
    if !text.contains(PROBLEM_PLACEHOLDER) {
        return Err(invalid(
            1,
            format!("the scaffold never says {PROBLEM_PLACEHOLDER}; put it where the problem goes"),
        ));
    }
    let lines: Vec<&str> = text.lines().collect();
    let Some(heading) = lines.iter().rposition(|l| {
        let l = l.trim().trim_start_matches('#').trim().trim_end_matches(':');
        l.eq_ignore_ascii_case(CRITERIA_HEADING)
    }) else {
        return Err(invalid(
            lines.len().max(1),
            format!(
                "no \"{CRITERIA_HEADING}\" heading; end the scaffold with `## {CRITERIA_HEADING}` and 3-5 checkable `- ` items"
            ),
        ));
    };
    let mut items = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(heading + 1) {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let item = l
            .strip_prefix("- [ ] ")
            .or_else(|| l.strip_prefix("- "))
            .or_else(|| l.strip_prefix("* "))
            .ok_or_else(|| {
                invalid(
                    i + 1,
                    format!("{l:?} is not a list item; the {CRITERIA_HEADING} section holds only `- ` items"),
                )
            })?;
        items.push(item.trim().to_string());
    }
    if !CRITERIA_RANGE.contains(&items.len()) {
        return Err(invalid(
            heading + 1,
            format!(
                "{CRITERIA_HEADING} has {} items; write {} to {} checkable ones",
                items.len(),
                CRITERIA_RANGE.start(),
                CRITERIA_RANGE.end()
            ),
        ));
    }
    Ok(items)
}

/// The thinking mode used when no rule decides: the one marked `default = true`; else
/// `council` if defined; else the first by name.
pub fn default_thinking(modes: &[ThinkingMode]) -> Option<&ThinkingMode> {
    modes
        .iter()
        .find(|m| m.default)
        .or_else(|| modes.iter().find(|m| m.name == "council"))
        .or_else(|| modes.first())
}
