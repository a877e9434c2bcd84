//! Typed manifests for switchyard: tools, skills, modes and injection patterns, loaded from a
//! folder of TOML files and validated with errors that name the file, line and field.
//!
//! | file | tables | fields |
//! |---|---|---|
//! | `tools.toml` (required) | `[[tool]]` | `name` (unique, `[A-Za-z0-9_.-]+`, kept as written: the name the agent calls), `description`, `modes`? (mode names or `"any"`; every mode when left out), `examples`?, `parameters`? (a JSON-schema table) |
//! | `tools.json`, `tools/*.json` (one per server; instead of or beside `tools.toml`) | an MCP `tools/list` result, or an array of function-calling tools | `name`, `description`?, `inputSchema`? (or `parameters`, `input_schema`), `title`?; each tool in every mode |
//! | `tools.toml`, beside `tools.json` or `tools/*.json` | `[[extend]]` | `name` (a tool of a JSON list), `examples`?, `tags`?, `modes`?, `description`? (replaces the server's): adds to a server's tool without rewriting it; its parameters stay the server's |
//! | `skills.toml` | `[[skill]]` | `name`, `description`, `modes`? (as for tools), `examples`?, `body`? (path relative to the folder) |
//! | `modes.toml` | `[[mode]]` | `name`, `description`, `keywords`, `examples`?, `base_tools`?, `base_skills`?, `rules`? (path) |
//! | `injection.toml` | `[[pattern]]`, `[[benign]]` | `text`, `lang`, `category`? (patterns only); a folder without any gets the built-in set at build time ([`Catalog::use_built_in_attacks`]) |
//! | `screen_checks.toml` | `[[must_flag]]`, `[[must_keep]]` | `text`, `lang`: texts every built injection screen must flag or let through (checked at build time, never trained on) |
//! | `off_topic.toml` | (top level) | `serves`? (general topics the catalog serves, names as `switchyard inspect` lists them: never closed as off-topic), `check`? (`false`: no off-topic check); see [`OffTopicSettings`] |
//! | `thinking.toml` | `[[thinking]]` | `name`, `description`, `scaffold` (path; takes `{problem}`, ends in `## Success Criteria` with 3-5 `- ` items), `keywords`?, `examples`?, `default`?; a folder without it gets the built-in modes at build time ([`Catalog::use_built_in_thinking`]) |
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("tools.toml"), r#"
//! [[tool]]
//! name = "read_file"
//! description = "Read a file from the workspace"
//! modes = ["any"]
//! examples = ["show me src/main.rs"]
//! "#).unwrap();
//! let catalog = switchyard_manifest::Catalog::load(dir.path()).unwrap();
//! assert_eq!(catalog.tools[0].name, "read_file");
//! assert_eq!(catalog.tools[0].texts(), vec!["read file: Read a file from the workspace", "show me src/main.rs"]);
//! ```
#![deny(missing_docs)]

pub use crate::catalog::{Benign, Catalog, HINTS, Mode, Pattern, Skill, Tool, Warning};
pub use crate::error::{ManifestError, Result};
pub use crate::injection::BUILT_IN_ATTACKS;
pub use crate::off_topic::{OFF_TOPIC_FILE, OffTopicSettings, ServedTopic};
pub use crate::screen_checks::{SCREEN_CHECKS_FILE, ScreenCheck, ScreenChecks};
pub use crate::thinking::{
    BUILT_IN_THINKING, CRITERIA_HEADING, CRITERIA_RANGE, PROBLEM_PLACEHOLDER, ThinkingMode,
    default_thinking,
};
pub use crate::tools_json::{TOOLS_DIR, TOOLS_JSON};

mod catalog;
mod error;
mod extend;
mod injection;
mod off_topic;
mod screen_checks;
mod texts;
mod thinking;
mod tools_json;
mod tools_toml;
