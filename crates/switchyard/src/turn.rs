//! What the harness says about this turn, and which layers a prompt has.

use crate::render::neutralize;
use serde::Serialize;

/// Which layers a prompt has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Every layer: constitution, the operator's identity and user files, rules, tools and
    /// skills, runtime, this turn, untrusted context, task.
    #[default]
    Full,
    /// Constitution, rules, tools and skills, task: no identity files, runtime, turn or
    /// memory (nothing is read besides the prompt files).
    Minimal,
    /// The task alone (the tool schemas are still in the account, for the provider's API).
    None,
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "full" => Ok(Self::Full),
            "minimal" => Ok(Self::Minimal),
            "none" => Ok(Self::None),
            other => Err(format!("profile {other:?}: use full, minimal or none")),
        }
    }
}

/// Per-turn text the harness supplies, rendered after the cache boundary in the trusted
/// `THIS TURN` layer (omitted when empty), so the stable prefix and its fingerprint never change
/// with it. Each value is printed on one line, neutralised like untrusted text, so it cannot
/// forge a heading.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnContext {
    /// Why the last attempt failed and what to do differently.
    #[serde(default)]
    pub retry: Option<String>,
    /// Where to pick up after an interrupted answer.
    #[serde(default)]
    pub continuation: Option<String>,
    /// A tool that failed and what to use instead.
    #[serde(default)]
    pub tool_recovery: Option<String>,
    /// The state of a multi-agent or multi-stage plan.
    #[serde(default)]
    pub orchestration: Option<String>,
    /// Anything else for this turn only.
    #[serde(default)]
    pub context: Option<String>,
    /// Print the current UTC date and time (off by default: the same input gives the same bytes).
    #[serde(default)]
    pub now: bool,
}

impl TurnContext {
    /// The layer's lines, or `None` when the harness gave nothing.
    pub(crate) fn render(&self) -> Option<String> {
        let mut out = String::new();
        for (label, value) in [
            ("retry", &self.retry),
            ("continuation", &self.continuation),
            ("tool recovery", &self.tool_recovery),
            ("orchestration", &self.orchestration),
            ("context", &self.context),
        ] {
            if let Some(v) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
                out.push_str(&format!("{label}: {}\n", neutralize(v)));
            }
        }
        if self.now {
            out.push_str(&format!("now: {}\n", utc_now()));
        }
        (!out.is_empty()).then_some(out)
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    switchyard_memory::utc_timestamp(secs)
}
