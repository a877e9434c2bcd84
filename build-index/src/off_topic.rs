//! The `off_topic` section: general topics no ordinary catalog serves, which a task may be
//! nearer to than to any of the catalog's tools and skills.
//!
//! The gate of the selection section asks how far the best item stands out among the catalog's
//! items; on a catalog without examples that almost never closes (every off-topic task written
//! for the development catalog got five tools). This check asks another question: is the task
//! nearer to a general topic (jokes, trivia, recipes, ...) than to anything in the catalog?
//!
//! - **Topics** ([`GENERAL_TOPICS`]) are written as cards, a name and a one-line description,
//!   and embedded as catalog documents like the tools' cards, so a task's cosine to a topic and
//!   to a tool are on one scale.
//! - **Topics the catalog serves are left out**: a topic's card, embedded as a request, that is
//!   nearer to one of the catalog's cards than to every other topic (less [`COVERAGE_SLACK`])
//!   is something the catalog does (a recipe catalog keeps its recipe requests). Cards only:
//!   an example is embedded as a request, and two requests stand nearer each other than a
//!   request and a card whatever they ask, so examples would cover topics they do not serve.
//! - **A catalog in another language** (German, French, Spanish, Portuguese, Italian) also
//!   gets the topics in its language ([`GENERAL_TOPICS_TRANSLATED`]), and whether it serves a
//!   topic is asked in that language.
//! - **Topics the catalog says it serves** (`off_topic.toml`, `serves = [...]`) are left out
//!   too: a topic's card is broad, and a tool that serves one corner of it (a calculator and
//!   "homework help") may never come nearer to it than the other topics do. `check = false`
//!   there builds no section.
//! - **The margin** is the model's ([`switchyard_embed::ModelInfo::off_topic_margin`]): a task
//!   is off-topic when its best topic beats its best tools or skills row by it.
//!
//! An index built with a query adapter has no such section: its tools and skills rows live in
//! the adapter's space, the topics in the model's.

use crate::Result;
use crate::general_topics::GENERAL_TOPICS_TRANSLATED;
use crate::rows::{TextKind, embed_all_as};
use switchyard_embed::Embedder;
use switchyard_format::{OffTopicMeta, dot};
use switchyard_manifest::OffTopicSettings;

/// General topics, as cards: what people ask an assistant that a tool catalog does not do.
/// Written for switchyard before any result on them (session 34), in English: the cards are
/// compared with tasks in any language by a multilingual model, and a catalog in another
/// language also gets them in its own where they are translated ([`GENERAL_TOPICS_TRANSLATED`]).
pub const GENERAL_TOPICS: &[&str] = &[
    "general knowledge: Answer trivia questions about history, geography, science and famous people.",
    "jokes: Tell a joke or a funny story.",
    "poems and songs: Write a poem, song lyrics or a short story.",
    "recipes: Suggest what to cook and explain a recipe step by step.",
    "health and wellbeing: General advice on diet, sleep, exercise and feeling better.",
    "relationships: Advice about friends, family, dating and breakups.",
    "word meanings: Explain what a word or an expression means and where it comes from.",
    "translation: Translate a sentence or a phrase into another language.",
    "homework help: Explain a school subject or solve a maths exercise.",
    "science explained: Explain how nature works: animals, plants, space, the weather and the human body.",
    "recommendations: Recommend books, films, series, music or games.",
    "sports: Results, players and rules of football, tennis and other sports.",
    "celebrities and pop culture: News and gossip about actors, singers and influencers.",
    "philosophy: Talk about the meaning of life, ethics and big questions.",
    "dreams and horoscopes: Interpret dreams, zodiac signs and horoscopes.",
    "pets: Care for dogs, cats and other pets; choose a name for a pet.",
    "gifts and parties: Ideas for presents, birthdays, weddings, speeches and toasts.",
    "travel ideas: Holiday destinations, sights to see and what to pack.",
    "gardening: How to grow plants, flowers and vegetables at home.",
    "language learning: Grammar, vocabulary and tips to learn a foreign language.",
    "small talk: Chat, greetings and how are you.",
    "personal writing: Help write a personal letter, a birthday card or a social media post.",
    "history: Events, wars, kings and empires of the past.",
    "geography: Countries, capitals, mountains, rivers and populations.",
    "fitness: Workouts, running plans and stretching.",
    "fun facts: Interesting and surprising facts about anything.",
    "riddles and games: Riddles, puzzles, quizzes and word games.",
    "life advice: Motivation, habits, stress, career choices and decisions.",
    "cars and home: Everyday tips for the car, cleaning and repairs at home.",
    "religion and mythology: Gods, myths, legends and beliefs.",
];

/// How much nearer than every other topic a catalog row may come to a topic's request before
/// the topic counts as served by the catalog (raw cosine). Slightly positive: a topic the
/// catalog nearly serves is left out too, since closing a real request costs more than
/// offering tools to an unrelated one.
pub const COVERAGE_SLACK: f32 = 0.01;

/// A topic card's name: the text before its colon.
fn topic_name(card: &str) -> &str {
    card.split_once(':').map_or(card, |(name, _)| name)
}

/// The section for a catalog whose tools and skills cards are `cards` (unit rows in the
/// model's space) and whose language is `language` (see `catalog_language`), or `None` when
/// the model has no margin or the catalog's `off_topic.toml` turns the check off. The topics
/// that file says the catalog serves are left out with those measured to be (a name that is
/// no topic's is an error naming the file, its line and the topics). A catalog in a language
/// with translated topics ([`GENERAL_TOPICS_TRANSLATED`]) gets them too, after the English rows
/// and under the same names; whether the catalog serves a topic is then asked in its language,
/// and a served topic is left out in both.
pub(crate) fn section(
    embedder: &dyn Embedder,
    cards: &[&[f32]],
    language: Option<&str>,
    settings: &OffTopicSettings,
) -> Result<Option<OffTopicMeta>> {
    // The declared names are checked whatever the model, so a typo is caught on every build.
    let served_by_file = declared(settings)?;
    let Some(margin) = embedder.info().off_topic_margin.filter(|_| settings.check) else {
        return Ok(None);
    };
    let mut served = served_by_file;
    let native = GENERAL_TOPICS_TRANSLATED
        .iter()
        .find(|(l, _)| language == Some(*l))
        .map(|(_, topics)| *topics);
    let versions: Vec<&[&str]> = std::iter::once(GENERAL_TOPICS).chain(native).collect();
    let best_card = |v: &[f32]| cards.iter().map(|c| dot(v, c)).fold(f32::NEG_INFINITY, f32::max);
    // A topic's request nearer to a catalog card than to every other topic is something the
    // catalog does. Asked in the catalog's language (the last version): the English topics'
    // requests found 8 of 30 topics (jokes, translation, gardening, ...) nearer to a Spanish
    // warehouse's cards than to another English topic, the Spanish ones 5
    // (`benches/RESULTS.md`, session 56).
    let mut docs_by_version = Vec::with_capacity(versions.len());
    for (v, topics) in versions.iter().enumerate() {
        let texts: Vec<String> = topics.iter().map(|s| s.to_string()).collect();
        let docs = embed_all_as(embedder, &texts, TextKind::Document, None)?;
        if v + 1 == versions.len() {
            let requests = embed_all_as(embedder, &texts, TextKind::Query, None)?;
            for (i, request) in requests.iter().enumerate() {
                let other_topics = docs
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, d)| dot(request, d))
                    .fold(f32::NEG_INFINITY, f32::max);
                served[i] |= best_card(request) > other_topics - COVERAGE_SLACK;
            }
        }
        docs_by_version.push(docs);
    }
    let (mut names, mut rows) = (Vec::new(), Vec::new());
    for docs in &docs_by_version {
        for (i, card) in GENERAL_TOPICS.iter().enumerate().filter(|&(i, _)| !served[i]) {
            names.push(topic_name(card).to_string());
            rows.extend_from_slice(&docs[i]);
        }
    }
    let covered = GENERAL_TOPICS
        .iter()
        .zip(&served)
        .filter(|&(_, &s)| s)
        .map(|(card, _)| topic_name(card).to_string())
        .collect();
    Ok(Some(OffTopicMeta { margin, names, rows, covered }))
}

/// Which topics `settings` declares served, by [`GENERAL_TOPICS`] index; an error naming the
/// file, the line and the topics for a name that is none of them.
pub(crate) fn declared(settings: &OffTopicSettings) -> Result<Vec<bool>> {
    let names: Vec<&str> = GENERAL_TOPICS.iter().map(|card| topic_name(card)).collect();
    let mut served = vec![false; names.len()];
    for topic in &settings.serves {
        let i = names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(&topic.name))
            .ok_or_else(|| settings.unknown_topic(topic, &names))?;
        served[i] = true;
    }
    Ok(served)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_models::WithMargin;
    use switchyard_embed::HashEmbedder;

    fn settings(text: &str) -> OffTopicSettings {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tools.toml"),
            "[[tool]]\nname = \"calculator\"\ndescription = \"Work out sums.\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join(switchyard_manifest::OFF_TOPIC_FILE), text).unwrap();
        switchyard_manifest::Catalog::load(dir.path()).unwrap().off_topic
    }

    #[test]
    fn a_topic_the_catalog_says_it_serves_is_left_out_of_the_section() {
        let model = WithMargin::new();
        let card = model.embed("calculator: Work out sums.").unwrap();
        let shipped =
            section(&model, &[&card], None, &OffTopicSettings::default()).unwrap().unwrap();
        assert!(shipped.names.iter().any(|n| n == "homework help"), "{:?}", shipped.covered);
        let declared = settings("serves = [\"Homework help\", \"jokes\"]\n");
        let meta = section(&model, &[&card], None, &declared).unwrap().unwrap();
        for topic in ["homework help", "jokes"] {
            assert!(meta.covered.iter().any(|c| c == topic), "{:?}", meta.covered);
            assert!(!meta.names.iter().any(|n| n == topic), "{:?}", meta.names);
        }
        assert_eq!(meta.names.len() * model.info().dim, meta.rows.len());
        assert_eq!(meta.names.len(), shipped.names.len() - 2);
    }

    #[test]
    fn a_catalog_that_turns_the_check_off_gets_no_section() {
        let model = WithMargin::new();
        let card = model.embed("calculator: Work out sums.").unwrap();
        let off = settings("check = false\n");
        assert!(section(&model, &[&card], None, &off).unwrap().is_none());
    }

    #[test]
    fn a_declared_name_that_is_no_topic_is_refused_with_its_file_and_line_on_any_model() {
        let bad = settings("# what we serve\nserves = [\"maths\"]\n");
        // MiniLM has no off-topic margin, and the typo is still caught.
        let no_margin = HashEmbedder::new(64);
        for model in [&no_margin as &dyn Embedder, &WithMargin::new()] {
            let e = section(model, &[], None, &bad).unwrap_err().to_string();
            assert!(e.contains("off_topic.toml:2: serves: \"maths\" is not one of the general topics; use one of: general knowledge, jokes"), "{e}");
        }
    }

    #[test]
    fn every_topic_has_a_name_and_a_description() {
        for card in GENERAL_TOPICS {
            let (name, description) = card.split_once(": ").expect(card);
            assert!(!name.is_empty() && description.ends_with('.'), "{card}");
            assert_eq!(topic_name(card), name);
        }
    }
}
