//! The `query_shift` section: what any request scores against each tools and skills row.
//!
//! Some models put every query near one common direction (multilingual-e5: the centroid of
//! ordinary requests has norm 0.9, so any two requests have a cosine near 0.8). A row that
//! leans towards that direction then scores well for every task and crowds out the item a task
//! needs. The builder embeds [`ORDINARY_REQUESTS`] (requests of every kind, nine languages,
//! written for this purpose and never used anywhere else) as tasks, takes their centroid `c`,
//! and stores per row `strength * (c . row)`; the router subtracts it from the task's score of
//! the row, i.e. it scores `task - strength * c` instead of `task`. Nothing is added at run time
//! but one subtraction per row, and nothing depends on the catalog: the same requests serve
//! every catalog.
//!
//! A tool's **examples** are requests themselves, and two requests stand near each other
//! whatever they ask: an example row took the lead from the cards of the tools a task needed,
//! so a tool with examples drew tasks that were not its own. Its rows lose the centroid's whole
//! score ([`EXAMPLE_SHIFT_STRENGTH`]): an example leads only where the task stands nearer to it
//! than an ordinary request does. Measured in session 55 on development catalogs
//! (`benches/RESULTS.md`): the default catalog's tool recall@3 0.886 -> 0.921 (e5-small); the
//! warehouse and clinic catalogs given their English labelled tasks as examples (5-fold)
//! 0.686 -> 0.719 and 0.768 -> 0.811 (in a trial build, strengths from 0.35 up gave the same
//! figures: the examples then hardly ever lead). Skills keep the cards' strength: a catalog has
//! a handful of skills, their examples carry skill recall, and shifting them too cost the
//! default catalog 0.06 of skill recall@3 in a trial build.
//!
//! The strength: 0.5 was chosen first on development splits (metatool's every tenth row,
//! Seal-Tools' `dev`, the development warehouse catalog); on the report sets it cost Seal-Tools
//! 1.3 points of hybrid recall@5, and 0.25 keeps most of metatool's gain with no set losing more
//! than 0.3. The report sets informed this constant; `benches/RESULTS.md` (2026-11-26, session
//! 16) gives both strengths on every set.

use switchyard_adapter::Adapter;
use switchyard_embed::Embedder;
use switchyard_format::{QueryShiftMeta, dot};

/// How much of the ordinary requests' centroid is taken from the task (0 = none, 1 = all).
pub const QUERY_SHIFT_STRENGTH: f32 = 0.25;
/// The same for a tool's example rows (every row of a tool but its first, the card): all of it,
/// for a model whose requests share a common direction ([`COMMON_DIRECTION`]).
pub const EXAMPLE_SHIFT_STRENGTH: f32 = 1.0;
/// The norm of the ordinary requests' centroid from which any two requests stand near each
/// other whatever they ask, and a tool's examples take the whole shift: multilingual-e5's is
/// 0.90, MiniLM's 0.33 (MiniLM's examples keep the cards' strength: with the whole, one of the
/// default catalog's off-topic probes opened its gate, and its tool recall@3 fell 0.793 ->
/// 0.779; `benches/RESULTS.md`, session 55).
pub const COMMON_DIRECTION: f32 = 0.6;

/// Ordinary requests of every kind a user sends an assistant: work and private, short and
/// long, in nine languages. Only their centroid is used.
pub const ORDINARY_REQUESTS: &[&str] = &[
    "can you summarise this document for me",
    "send the weekly update to the whole team",
    "book a table for four on Friday evening",
    "what's the weather going to be like tomorrow",
    "find me a cheap flight to Lisbon in March",
    "remind me to call the dentist at 3",
    "how do I convert a list of strings to integers in Python",
    "translate this paragraph into Spanish",
    "draft a polite reply saying I can't make the meeting",
    "show me last month's sales by region",
    "cancel my subscription",
    "why is my laptop so slow",
    "add milk and eggs to the shopping list",
    "schedule a call with Anna next week",
    "what's the status of my order",
    "help me plan a three-day trip to Rome",
    "write a cover letter for a junior accountant position",
    "which of these two phones has the better battery",
    "I need to reset my password",
    "compare the prices of these suppliers and tell me which is cheapest",
    "play some relaxing music",
    "set up a recurring payment for the rent",
    "explain what this error message means",
    "create a spreadsheet to track my expenses",
    "move all the invoices from last year into one folder",
    "check if the server is still running",
    "give me a recipe with chicken and rice",
    "how many vacation days do I have left",
    "please fix the typo in the title and publish it again",
    "the printer on the second floor is not working again, can someone look at it",
    "I'd like to return the shoes I bought last week because they are too small",
    "could you pull together the numbers for the board meeting and put them in a short deck",
    "resuma este relatório em três frases",
    "quanto custa enviar um pacote para o Porto",
    "marca uma reunião com o fornecedor na segunda",
    "preciso de uma fatura da minha última compra",
    "¿puedes revisar este contrato antes de firmarlo?",
    "reserva un hotel cerca de la estación",
    "¿cuánto gasté en restaurantes este mes?",
    "avisa al equipo de que hoy llego tarde",
    "peux-tu m'aider à rédiger un courriel au propriétaire",
    "trouve-moi les horaires du train pour Lyon",
    "combien de commandes avons-nous reçues hier",
    "mets à jour la liste des participants",
    "kannst du mir die Rechnung vom Januar schicken",
    "wie lange dauert die Lieferung nach Wien",
    "erstelle eine Übersicht der offenen Aufgaben",
    "bitte sag den Termin am Donnerstag ab",
    "puoi controllare lo stato della mia spedizione",
    "prepara una presentazione per il cliente",
    "quanto tempo ci vuole per arrivare in centro",
    "先週の売上をまとめてください",
    "明日の会議の資料を送って",
    "このメールに返信してください",
    "帮我查一下明天的航班",
    "把这份文件翻译成英文",
    "这个月的账单是多少",
    "проверь, пришёл ли платёж от клиента",
    "напиши короткое поздравление коллеге",
    "найди ближайшую аптеку",
    "what should I do about the leak under the sink",
    "list every customer who hasn't paid yet",
    "turn this meeting transcript into action items",
    "is there a faster way to get to the airport",
];

/// The query shift of the tools and skills rows (`matrices[0]`, `[1]`, as stored; `tool_spans`:
/// each tool's first row and row count): the centroid of [`ORDINARY_REQUESTS`] embedded as
/// tasks (and mapped like a task when there is an adapter).
pub(crate) fn section(
    embedder: &dyn Embedder,
    adapter: Option<&Adapter>,
    matrices: &[Vec<f32>],
    tool_spans: &[(usize, usize)],
    dim: usize,
) -> crate::Result<QueryShiftMeta> {
    let texts: Vec<String> = ORDINARY_REQUESTS.iter().map(|s| s.to_string()).collect();
    let rows: Vec<f32> = crate::embed_all(embedder, &texts, None)?.into_iter().flatten().collect();
    let rows = match adapter {
        Some(a) => a.apply_rows(&rows),
        None => rows,
    };
    let c = centroid(&rows, dim);
    let mut shift = query_shift(&c, texts.len(), &matrices[0], &matrices[1], dim);
    if dot(&c, &c).sqrt() >= COMMON_DIRECTION {
        examples_at_full_strength(&mut shift.tools, tool_spans);
    }
    Ok(shift)
}

/// Raises each example row's shift (every row of a span but its first) from the cards'
/// strength to [`EXAMPLE_SHIFT_STRENGTH`].
fn examples_at_full_strength(per_row: &mut [f32], spans: &[(usize, usize)]) {
    for &(first, count) in spans {
        for v in &mut per_row[first + 1..first + count] {
            *v *= EXAMPLE_SHIFT_STRENGTH / QUERY_SHIFT_STRENGTH;
        }
    }
}

/// The mean of `vectors` (rows of width `dim`), not normalised.
pub(crate) fn centroid(vectors: &[f32], dim: usize) -> Vec<f32> {
    let n = (vectors.len() / dim).max(1) as f32;
    let mut c = vec![0f32; dim];
    for row in vectors.chunks_exact(dim) {
        for (a, x) in c.iter_mut().zip(row) {
            *a += x;
        }
    }
    c.iter_mut().for_each(|a| *a /= n);
    c
}

/// The section: per tools and skills row, `strength * (centroid . row)`.
pub(crate) fn query_shift(
    centroid: &[f32],
    requests: usize,
    tools: &[f32],
    skills: &[f32],
    dim: usize,
) -> QueryShiftMeta {
    let per_row = |rows: &[f32]| {
        rows.chunks_exact(dim).map(|r| QUERY_SHIFT_STRENGTH * dot(centroid, r)).collect()
    };
    QueryShiftMeta {
        strength: QUERY_SHIFT_STRENGTH,
        requests: requests as u32,
        tools: per_row(tools),
        skills: per_row(skills),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_loses_what_the_centroid_gives_it() {
        // Two requests in two dimensions; the first row lies on their centroid.
        let c = centroid(&[1.0, 0.0, 0.6, 0.8], 2);
        assert_eq!(c, [0.8, 0.4]);
        let shift = query_shift(&c, 2, &[1.0, 0.0, 0.0, 1.0], &[], 2);
        assert!((shift.tools[0] - QUERY_SHIFT_STRENGTH * 0.8).abs() < 1e-6);
        assert!((shift.tools[1] - QUERY_SHIFT_STRENGTH * 0.4).abs() < 1e-6);
        assert!(shift.skills.is_empty());
        assert_eq!(shift.requests, 2);
    }

    #[test]
    fn a_tools_examples_lose_the_whole_centroid_and_its_card_a_quarter() {
        // Tool 0: card and one example; tool 1: its card alone. All rows score 0.8 against c.
        let mut per_row = vec![QUERY_SHIFT_STRENGTH * 0.8; 3];
        examples_at_full_strength(&mut per_row, &[(0, 2), (2, 1)]);
        assert!((per_row[0] - QUERY_SHIFT_STRENGTH * 0.8).abs() < 1e-6);
        assert!((per_row[1] - EXAMPLE_SHIFT_STRENGTH * 0.8).abs() < 1e-6);
        assert!((per_row[2] - QUERY_SHIFT_STRENGTH * 0.8).abs() < 1e-6);
    }

    #[test]
    fn the_requests_are_distinct_from_the_gates_off_topic_probes() {
        // The gate is calibrated on the probes with shifted scores: the same texts would make
        // the probes look closer to the centroid than any real off-topic task.
        for r in ORDINARY_REQUESTS {
            assert!(!crate::selection::OFF_TOPIC.contains(r), "{r}");
        }
        let mut sorted: Vec<&str> = ORDINARY_REQUESTS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ORDINARY_REQUESTS.len(), "a request is listed twice");
    }
}
