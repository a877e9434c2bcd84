//! `[[extend]]` in `tools.toml`: examples, tags, modes and a description added to an MCP
//! server's tool without rewriting it.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::{err, load};

/// A mail server's `tools/list` answer: one tool described, one not.
const GMAIL: &str = r#"{
  "tools": [
    {
      "name": "search_emails",
      "description": "Searches for emails using Gmail search syntax",
      "inputSchema": { "type": "object", "properties": { "query": { "type": "string" } } }
    },
    {
      "name": "delete_email",
      "inputSchema": { "type": "object", "properties": { "messageId": { "type": "string" } } }
    }
  ]
}"#;

const MODES: &str = "[[mode]]\nname = \"act\"\ndescription = \"Do things\"\nkeywords = []\n\n[[mode]]\nname = \"review\"\ndescription = \"Look things over\"\nkeywords = []\n";

#[test]
fn a_servers_tool_gets_examples_tags_modes_and_a_description_and_keeps_its_parameters() {
    let extend = r#"
[[extend]]
name = "search_emails"
examples = ["did Priya reply about the contract yet?", "  ", "any mail from the bank this week?"]
tags = ["inbox"]
modes = ["act", "review"]

[[extend]]
name = "delete_email"
description = "Delete an e-mail by its id"
"#;
    let c = load(&[("modes.toml", MODES), ("tools/gmail.json", GMAIL), ("tools.toml", extend)]);
    let search = c.tools.iter().find(|t| t.name == "search_emails").unwrap();
    assert_eq!(
        search.examples,
        ["did Priya reply about the contract yet?", "any mail from the bank this week?"]
    );
    assert_eq!(search.modes, ["act", "review"]);
    assert_eq!(search.tags, ["inbox"]);
    assert_eq!(search.description, "Searches for emails using Gmail search syntax");
    assert_eq!(search.texts().len(), 3, "the card and each example are embedded");
    let delete = c.tools.iter().find(|t| t.name == "delete_email").unwrap();
    assert_eq!(delete.card(), "delete email: Delete an e-mail by its id Parameters: message id.");
    assert_eq!(delete.modes, ["any"], "a tool whose extension names no modes keeps every mode");
    assert_eq!(delete.parameters.as_ref().unwrap()["properties"]["messageId"]["type"], "string");
    // The description it was given answers the server's missing one: no warning.
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // Without the extension the tool is warned about, and the warning says how to fix it.
    let plain = load(&[("tools/gmail.json", GMAIL)]);
    let w: Vec<String> = plain.warnings.iter().map(ToString::to_string).collect();
    assert!(w.len() == 1 && w[0].contains("an [[extend]] entry with a `description`"), "{w:?}");
    // The extension is part of the catalog: editing it changes the content hash (a rebuild).
    assert_ne!(c.content_hash(), plain.content_hash());
}

#[test]
fn extensions_sit_beside_the_files_own_tools() {
    let toml = "[[tool]]\nname = \"read_file\"\ndescription = \"Read a file\"\n\n[[extend]]\nname = \"search_emails\"\nexamples = [\"find the invoice mail\"]\n";
    let c = load(&[("tools.json", GMAIL), ("tools.toml", toml)]);
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["delete_email", "read_file", "search_emails"]);
    assert_eq!(c.tools[2].examples, ["find the invoice mail"]);
}

#[test]
fn a_wrong_extension_is_refused_naming_its_line_the_field_and_the_fix() {
    let cases = [
        (
            "[[extend]]\nname = \"search_mail\"\nexamples = [\"x\"]\n",
            "DIR/tools.toml:2: extend.name: no tool of tools.json or tools/*.json is named \"search_mail\"; [[extend]] adds to a server's tool",
        ),
        (
            "[[extend]]\nname = \"search_emails\"\nexamples = [\"a\"]\n\n[[extend]]\nname = \"search_emails\"\ntags = [\"b\"]\n",
            "DIR/tools.toml:6: extend.name: \"search_emails\" is already extended at line 2; merge the two [[extend]] entries",
        ),
        (
            "[[tool]]\nname = \"read_file\"\ndescription = \"Read a file\"\n\n[[extend]]\nname = \"read_file\"\nexamples = [\"a\"]\n",
            "DIR/tools.toml:6: extend.name: \"read_file\" is a [[tool]] of this file (line 2); write its examples",
        ),
        (
            "[[extend]]\nname = \"search_emails\"\n",
            "DIR/tools.toml:2: extend: extends \"search_emails\" with nothing; give it examples, tags, modes or a description, or remove the entry",
        ),
        (
            "[[extend]]\nname = \"search_emails\"\ndescription = \" \"\n",
            "DIR/tools.toml:3: extend.description: is empty; leave it out to keep the server's description",
        ),
        (
            "[[extend]]\nname = \"search_emails\"\nmodes = [\"plan\"]\n",
            "DIR/tools.toml:3: extend.modes: mode \"plan\" does not exist; allowed: act, review, any",
        ),
        // The parameters are the server's: what the agent calls.
        ("[[extend]]\nname = \"search_emails\"\nparameters = {}\n", "unknown field `parameters`"),
    ];
    for (toml, says) in cases {
        let e = err(&[("modes.toml", MODES), ("tools/gmail.json", GMAIL), ("tools.toml", toml)]);
        assert!(e.starts_with(says) || e.contains(says), "{toml}\n{e}");
    }
    // Extensions alone, with no JSON list to extend: the first one is refused.
    let e = err(&[("tools.toml", "[[extend]]\nname = \"search_emails\"\nexamples = [\"a\"]\n")]);
    assert!(e.contains("no tool of tools.json or tools/*.json is named \"search_emails\""), "{e}");
    // A tools.toml with neither tools nor extensions says both can go there.
    let e = err(&[("tools/gmail.json", GMAIL), ("tools.toml", "# nothing yet\n")]);
    assert!(e.contains("no [[tool]] entries; add at least one (or [[extend]] entries"), "{e}");
}
