//! Every manifest mistake gets an error naming the file, line and field, and what is allowed.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::{err, folder};
use switchyard_manifest::Catalog;

const MODES: &str = r#"
[[mode]]
name = "act"
description = "Change things"
keywords = ["fix", "corrige"]
base_tools = ["read_file"]

[[mode]]
name = "plan"
description = "Investigate first"
keywords = ["explore"]
"#;

const TOOLS: &str = r#"
[[tool]]
name = "read_file"
description = "Read a file from the workspace"
modes = ["any"]

[[tool]]
name = "run_tests"
description = "Run the project's test suite"
modes = ["act"]
parameters = { type = "object", properties = { filter = { type = "string" } } }
"#;

#[test]
fn a_valid_folder_loads_sorted_with_parameters_as_json() {
    let dir = folder(&[("tools.toml", TOOLS), ("modes.toml", MODES)]);
    let c = Catalog::load(dir.path()).unwrap();
    assert_eq!(
        c.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["read_file", "run_tests"]
    );
    assert_eq!(c.tools[1].parameters.as_ref().unwrap()["properties"]["filter"]["type"], "string");
    assert_eq!(c.modes[0].keywords, ["fix", "corrige"]);
    assert_eq!(c.default_mode(), "act");
    assert!(c.warnings.is_empty());
}

#[test]
fn tools_toml_is_required() {
    assert_eq!(
        err(&[("modes.toml", MODES)]),
        "DIR: no tools.toml or tools.json; a manifest folder needs tools.toml with [[tool]] entries, or tools.json (or tools/*.json, one per server) with an MCP tools/list result"
    );
}

#[test]
fn unknown_keys_name_the_line_and_key() {
    let e = err(&[(
        "tools.toml",
        "[[tool]]\nname = \"a\"\ndescription = \"x\"\nmodes = [\"any\"]\ncolour = \"red\"\n",
    )]);
    assert!(e.starts_with("DIR/tools.toml:5: unknown field `colour`"), "{e}");
    assert!(e.contains("expected one of"), "{e}");
}

#[test]
fn duplicate_names_point_at_the_first() {
    let e = err(&[(
        "tools.toml",
        "[[tool]]\nname = \"a\"\ndescription = \"x\"\nmodes = [\"any\"]\n[[tool]]\nname = \"a\"\ndescription = \"y\"\nmodes = [\"any\"]\n",
    )]);
    assert_eq!(
        e,
        "DIR/tools.toml:6: tool.name: \"a\" is already defined at line 2; names must be unique"
    );
}

#[test]
fn bad_names_say_what_is_allowed() {
    let e = err(&[(
        "tools.toml",
        "[[tool]]\nname = \"Read File\"\ndescription = \"x\"\nmodes = [\"any\"]\n",
    )]);
    assert_eq!(
        e,
        "DIR/tools.toml:2: tool.name: \"Read File\" is not allowed; use letters, digits, `_`, `.` and `-`"
    );
    let e = err(&[
        ("tools.toml", "[[tool]]\nname = \"readFile\"\ndescription = \"x\"\nmodes = [\"any\"]\n"),
        (
            "skills.toml",
            "[[skill]]\nname = \"DamagedGoods\"\ndescription = \"x\"\nmodes = [\"any\"]\n",
        ),
    ]);
    assert!(e.contains("skill.name") && e.contains("use lowercase letters"), "{e}");
}

#[test]
fn tool_names_keep_their_case_as_mcp_servers_write_them() {
    let dir = tempfile::tempdir().unwrap();
    let tools = "[[tool]]\nname = \"renewLoan\"\ndescription = \"Renew a borrowed book\"\nmodes = [\"any\"]\n\n[[tool]]\nname = \"renew_loan\"\ndescription = \"Renew a loan for a whole class\"\nmodes = [\"any\"]\n";
    std::fs::write(dir.path().join("tools.toml"), tools).unwrap();
    let catalog = switchyard_manifest::Catalog::load(dir.path()).unwrap();
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["renewLoan", "renew_loan"]);
    // Routed by its words, called by its name.
    assert_eq!(catalog.tools[0].name_words(), "renew Loan");
}

#[test]
fn unknown_modes_list_the_allowed_ones() {
    let e = err(&[
        ("modes.toml", MODES),
        ("tools.toml", "[[tool]]\nname = \"a\"\ndescription = \"x\"\nmodes = [\"review\"]\n"),
    ]);
    assert_eq!(
        e,
        "DIR/tools.toml:4: tool.modes: mode \"review\" does not exist; allowed: act, plan, any"
    );
}

#[test]
fn a_tool_or_skill_without_modes_is_offered_in_every_mode_and_an_empty_list_is_an_error() {
    // A catalog of names and one-line descriptions is a catalog.
    let tools = "[[tool]]\nname = \"restart_service\"\ndescription = \"Restart a service\"\n";
    let skills = "[[skill]]\nname = \"incident\"\ndescription = \"Run an incident review\"\n";
    let modes = MODES.replace("base_tools = [\"read_file\"]", "");
    let dir = folder(&[("modes.toml", &modes), ("tools.toml", tools), ("skills.toml", skills)]);
    let c = Catalog::load(dir.path()).unwrap();
    assert_eq!(
        (&c.tools[0].modes, &c.skills[0].modes),
        (&vec!["any".to_string()], &vec!["any".to_string()])
    );
    let e = err(&[("modes.toml", &modes), ("tools.toml", &format!("{tools}modes = []\n"))]);
    assert_eq!(e, "DIR/tools.toml:4: tool.modes: must list at least one mode, or \"any\"");
}

#[test]
fn missing_base_tools_are_errors() {
    let modes = MODES.replace("base_tools = [\"read_file\"]", "base_tools = [\"nope\"]");
    let e = err(&[("modes.toml", &modes), ("tools.toml", TOOLS)]);
    assert_eq!(
        e,
        "DIR/modes.toml:6: mode.base_tools: tool \"nope\" does not exist; define it in tools.toml or remove it here"
    );
}

#[test]
fn an_empty_tool_description_warns_and_an_empty_skill_description_is_an_error() {
    // MCP servers ship tools without descriptions: the tool loads, routable by its name.
    let dir = folder(&[(
        "tools.toml",
        "[[tool]]\nname = \"a\"\ndescription = \"  \"\nmodes = [\"any\"]\n",
    )]);
    let c = Catalog::load(dir.path()).unwrap();
    let w = c.warnings[0].to_string().replace(&dir.path().display().to_string(), "DIR");
    assert_eq!(
        w,
        "DIR/tools.toml:2: warning: tool.description: a has no description; it stays routable by its name, but one sentence saying what it does routes far better"
    );
    let skills = "[[skill]]\nname = \"s\"\ndescription = \" \"\nmodes = [\"any\"]\n";
    let e = err(&[("tools.toml", TOOLS), ("modes.toml", MODES), ("skills.toml", skills)]);
    assert_eq!(
        e,
        "DIR/skills.toml:3: skill.description: must not be empty; write one or two sentences saying what it does"
    );
}

#[test]
fn body_paths_must_stay_inside_and_exist() {
    let skills = "[[skill]]\nname = \"s\"\ndescription = \"d\"\nmodes = [\"any\"]\nbody = \"../secret.md\"\n";
    let e = err(&[("tools.toml", TOOLS), ("modes.toml", MODES), ("skills.toml", skills)]);
    assert!(
        e.starts_with(
            "DIR/skills.toml:5: skill.body: \"../secret.md\" escapes the manifest folder"
        ),
        "{e}"
    );
    let skills =
        "[[skill]]\nname = \"s\"\ndescription = \"d\"\nmodes = [\"any\"]\nbody = \"skills/s.md\"\n";
    let e = err(&[("tools.toml", TOOLS), ("modes.toml", MODES), ("skills.toml", skills)]);
    assert!(e.starts_with("DIR/skills.toml:5: skill.body: DIR/skills/s.md does not exist"), "{e}");
    let dir = folder(&[
        ("tools.toml", TOOLS),
        ("modes.toml", MODES),
        ("skills.toml", skills),
        ("skills/s.md", "Do this.\n"),
    ]);
    assert_eq!(Catalog::load(dir.path()).unwrap().skills[0].body.as_deref(), Some("Do this.\n"));
}

#[test]
fn syntax_errors_give_the_line() {
    let e = err(&[("tools.toml", "[[tool]]\nname = \"a\"\ndescription = \n")]);
    assert!(e.starts_with("DIR/tools.toml:3: "), "{e}");
}

#[test]
fn a_key_given_twice_is_named_with_its_line() {
    let tools =
        "[[tool]]\nname = \"a\"\ndescription = \"Read a file\"\ndescription = \"Read it\"\n";
    let e = err(&[("tools.toml", tools)]);
    assert!(e.starts_with("DIR/tools.toml:4: duplicate key `description`"), "{e}");
    assert!(e.contains("remove one of them"), "{e}");
}

#[test]
fn a_modes_file_without_modes_is_refused_as_itself_not_through_the_tools_that_name_modes() {
    let e = err(&[("tools.toml", TOOLS), ("modes.toml", "# modes come later\n")]);
    assert!(e.starts_with("DIR/modes.toml:1: mode: no [[mode]] entries"), "{e}");
}

#[test]
fn near_duplicate_descriptions_warn_but_load() {
    let tools = "[[tool]]\nname = \"a\"\ndescription = \"Search the code base for a regular expression\"\nmodes = [\"any\"]\n[[tool]]\nname = \"b\"\ndescription = \"Search the code base for a regular expression.\"\nmodes = [\"any\"]\n";
    let dir = folder(&[("tools.toml", tools)]);
    let c = Catalog::load(dir.path()).unwrap();
    assert_eq!(c.warnings.len(), 1);
    assert!(
        c.warnings[0]
            .to_string()
            .contains("tools.toml:6: warning: b and a have near-identical descriptions"),
        "{}",
        c.warnings[0]
    );
}

#[test]
fn content_hash_ignores_formatting_but_not_content() {
    let a = folder(&[("tools.toml", TOOLS), ("modes.toml", MODES)]);
    let b = folder(&[
        ("tools.toml", &TOOLS.replace("\n\n", "\n\n\n# comment\n")),
        ("modes.toml", MODES),
    ]);
    let c = folder(&[("tools.toml", &TOOLS.replace("test suite", "tests")), ("modes.toml", MODES)]);
    let h = |d: &tempfile::TempDir| Catalog::load(d.path()).unwrap().content_hash();
    assert_eq!(h(&a), h(&b));
    assert_ne!(h(&a), h(&c));
}

#[test]
fn a_constitution_travels_with_the_catalog_and_an_empty_one_is_an_error_naming_the_fix() {
    let dir = folder(&[
        ("tools.toml", TOOLS),
        ("modes.toml", MODES),
        ("constitution.md", "You serve the front desk.\n"),
    ]);
    let c = Catalog::load(dir.path()).unwrap();
    assert_eq!(c.constitution.as_deref(), Some("You serve the front desk.\n"));
    let without = folder(&[("tools.toml", TOOLS), ("modes.toml", MODES)]);
    let plain = Catalog::load(without.path()).unwrap();
    assert_eq!(plain.constitution, None);
    assert_ne!(c.content_hash(), plain.content_hash(), "an edited constitution rebuilds the index");
    let dir = folder(&[("tools.toml", TOOLS), ("modes.toml", MODES), ("constitution.md", " \n\n")]);
    let e = Catalog::load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("constitution.md") && e.contains("is empty") && e.contains("delete it"),
        "{e}"
    );
}
