//! `thinking.toml`: thinking modes (council, red_team, ...), each a scaffold an agent follows to
//! think through a problem, chosen by keyword rules, an explicit choice, an optional semantic
//! fallback or the declared default. A catalog without the file gets the built-in modes at
//! build time ([`Catalog::use_built_in_thinking`]).

use crate::catalog::{Catalog, Letters, Source, clean_list, non_empty, read_relative, unique};
use crate::{ManifestError, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The thinking modes switchyard ships (`manifests/thinking.toml` and its scaffolds: council,
/// red_team, first_principles, be_creative; keywords in many languages), compiled in so that an
/// index of any catalog can think a problem through.
const BUILT_IN: &str = include_str!("../../../manifests/thinking.toml");

/// The built-in scaffolds, by the path `manifests/thinking.toml` gives them.
const BUILT_IN_SCAFFOLDS: [(&str, &str); 4] = [
    ("thinking/be_creative.md", include_str!("../../../manifests/thinking/be_creative.md")),
    ("thinking/council.md", include_str!("../../../manifests/thinking/council.md")),
    (
        "thinking/first_principles.md",
        include_str!("../../../manifests/thinking/first_principles.md"),
    ),
    ("thinking/red_team.md", include_str!("../../../manifests/thinking/red_team.md")),
];

/// Where [`Catalog::use_built_in_thinking`]'s modes come from, as errors and reports name it.
pub const BUILT_IN_THINKING: &str = "switchyard's built-in manifests/thinking.toml";

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

/// Parses and validates `thinking.toml` (already read into `src`) with its scaffolds in `dir`,
/// sorted by name.
pub(crate) fn load(src: &Source, dir: &Path) -> Result<Vec<ThinkingMode>> {
    load_with(src, |rel| {
        Ok((read_relative(src, dir, rel, "thinking.scaffold")?, dir.join(rel.get_ref())))
    })
}

/// Parses and validates `thinking.toml` with `scaffold` giving each scaffold's text and path.
fn load_with(
    src: &Source,
    scaffold: impl Fn(&Spanned<String>) -> Result<(String, PathBuf)>,
) -> Result<Vec<ThinkingMode>> {
    let file: ThinkingFile = src.parse()?;
    let mut seen = BTreeMap::new();
    let mut default_at: Option<(String, usize)> = None;
    let mut out = Vec::new();
    for t in file.thinking {
        let name = unique(src, &mut seen, &t.name, "thinking.name", Letters::Lower)?;
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
        let (scaffold, scaffold_path) = scaffold(&t.scaffold)?;
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

impl Catalog {
    /// Gives a catalog without thinking modes (no `thinking.toml`) switchyard's built-in ones,
    /// so that `switchyard think` and `assemble --thinking` work on an index of any catalog. A
    /// catalog with its own keeps them. Returns whether it did. Costs nothing at assembly unless
    /// a thinking mode is asked for.
    pub fn use_built_in_thinking(&mut self) -> Result<bool> {
        if !self.thinking.is_empty() {
            return Ok(false);
        }
        let src = Source::new(BUILT_IN_THINKING.into(), BUILT_IN.to_string());
        self.thinking = load_with(&src, |rel| {
            let text = BUILT_IN_SCAFFOLDS.iter().find(|(path, _)| path == rel.get_ref());
            let (path, text) = text.ok_or_else(|| {
                src.invalid(rel.span(), "thinking.scaffold", "is not one of the built-in scaffolds")
            })?;
            Ok((
                (*text).to_string(),
                PathBuf::from(format!("switchyard's built-in manifests/{path}")),
            ))
        })?;
        Ok(true)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn hotel_catalog(files: &[(&str, &str)]) -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let tools = "[[tool]]\nname = \"book_room\"\ndescription = \"Book a hotel room\"\nmodes = [\"any\"]\n";
        std::fs::write(dir.path().join("tools.toml"), tools).unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let catalog = Catalog::load(dir.path()).unwrap();
        (dir, catalog)
    }

    #[test]
    fn a_catalog_without_thinking_modes_gets_the_ones_switchyard_ships() {
        let (_dir, mut c) = hotel_catalog(&[]);
        assert!(c.thinking.is_empty());
        assert!(c.use_built_in_thinking().unwrap());
        // The same modes, scaffolds and all, as the default catalog's own files give.
        let shipped = Catalog::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests"));
        assert_eq!(c.thinking, shipped.unwrap().thinking);
        assert_eq!(default_thinking(&c.thinking).map(|m| m.name.as_str()), Some("council"));
        assert!(c.thinking.iter().all(|m| m.render("p").contains('p') && !m.criteria.is_empty()));
        // A second call changes nothing.
        assert!(!c.use_built_in_thinking().unwrap());
    }

    #[test]
    fn a_catalog_with_its_own_thinking_modes_keeps_them() {
        let scaffold =
            "Plan the night shift for: {problem}\n\n## Success Criteria\n- a\n- b\n- c\n";
        let toml = "[[thinking]]\nname = \"rota\"\ndescription = \"Plan staff rotas\"\nscaffold = \"rota.md\"\n";
        let (_dir, mut c) = hotel_catalog(&[("thinking.toml", toml), ("rota.md", scaffold)]);
        assert!(!c.use_built_in_thinking().unwrap());
        assert_eq!(c.thinking.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["rota"]);
    }
}
