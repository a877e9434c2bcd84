//! `[[extend]]` in `tools.toml`: what a catalog's author adds to a tool an MCP server lists
//! (`tools.json`, `tools/*.json`) without rewriting it: example requests, tags, the modes it is
//! offered in, and a description where the server's is missing or says too little.
//!
//! A server's tool is otherwise taken as the server lists it: offered in every mode, with no
//! examples, and described only by what its author wrote for another purpose. Examples are what
//! a catalog routes on best, and the parameters stay the server's: they are what the agent
//! calls, so `[[extend]]` cannot change them.

use crate::catalog::{Source, Tool, Warning, check_modes, clean_list, long_text};
use crate::{ManifestError, Result};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use toml::Spanned;

/// One `[[extend]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExtension {
    name: Spanned<String>,
    #[serde(default)]
    description: Option<Spanned<String>>,
    #[serde(default)]
    modes: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
}

/// One checked `[[extend]]` entry, to apply once every server's tools are read.
pub(crate) struct Extension {
    name: String,
    line: usize,
    description: Option<String>,
    /// `None`: the tool keeps the modes it has (every mode, for a server's tool).
    modes: Option<Vec<String>>,
    examples: Vec<String>,
    tags: Vec<String>,
}

impl Extension {
    /// The tool it extends.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether it gives the tool a description.
    pub(crate) fn describes(&self) -> bool {
        self.description.is_some()
    }
}

/// Checks `tools.toml`'s `[[extend]]` entries against the catalog's modes. `tool_lines` holds
/// the file's own `[[tool]]` names and lines: a tool of the file itself is extended in its own
/// entry, not here.
pub(crate) fn check(
    src: &Source,
    raw: Vec<RawExtension>,
    mode_names: &BTreeSet<String>,
    tool_lines: &BTreeMap<String, usize>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Extension>> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(raw.len());
    for e in raw {
        let name = e.name.get_ref().trim().to_string();
        let line = src.line(e.name.span());
        if let Some(first) = seen.get(&name) {
            return Err(src.invalid(
                e.name.span(),
                "extend.name",
                format!(
                    "{name:?} is already extended at line {first}; merge the two [[extend]] entries"
                ),
            ));
        }
        if let Some(own) = tool_lines.get(&name) {
            return Err(src.invalid(
                e.name.span(),
                "extend.name",
                format!("{name:?} is a [[tool]] of this file (line {own}); write its examples, tags, modes and description in that entry. [[extend]] is for the tools of tools.json and tools/*.json"),
            ));
        }
        let description = match &e.description {
            Some(d) if d.get_ref().trim().is_empty() => {
                return Err(src.invalid(
                    d.span(),
                    "extend.description",
                    "is empty; leave it out to keep the server's description",
                ));
            }
            Some(d) => Some(d.get_ref().trim().to_string()),
            None => None,
        };
        if let Some(d) = &description {
            long_text(src, line, "extend.description", &name, d, warnings);
        }
        let modes = match &e.modes {
            Some(_) => Some(check_modes(src, e.modes.as_ref(), mode_names, "extend.modes")?),
            None => None,
        };
        let (examples, tags) = (clean_list(e.examples), clean_list(e.tags));
        if description.is_none() && modes.is_none() && examples.is_empty() && tags.is_empty() {
            return Err(src.invalid(
                e.name.span(),
                "extend",
                format!("extends {name:?} with nothing; give it examples, tags, modes or a description, or remove the entry"),
            ));
        }
        seen.insert(name.clone(), line);
        out.push(Extension { name, line, description, modes, examples, tags });
    }
    Ok(out)
}

/// Applies the extensions to the catalog's tools; an extension of a tool no JSON list has is an
/// error naming its line in `src`.
pub(crate) fn apply(src: &Source, extensions: Vec<Extension>, tools: &mut [Tool]) -> Result<()> {
    for e in extensions {
        let Some(tool) = tools.iter_mut().find(|t| t.name == e.name) else {
            return Err(ManifestError::Invalid {
                path: src.path.clone(),
                line: e.line,
                field: "extend.name".into(),
                message: format!(
                    "no tool of tools.json or tools/*.json is named {:?}; [[extend]] adds to a server's tool, under the name the server lists it by",
                    e.name
                ),
            });
        };
        if let Some(d) = e.description {
            tool.description = d;
        }
        if let Some(modes) = e.modes {
            tool.modes = modes;
        }
        tool.examples.extend(e.examples);
        tool.tags.extend(e.tags);
    }
    Ok(())
}
