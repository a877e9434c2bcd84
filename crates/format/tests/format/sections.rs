//! Each optional section: its round trip beside the sections it needs, and the checks that
//! refuse a bad one with a message naming it.

use super::*;

#[test]
fn mode_questions_round_trip_only_beside_a_selection_and_bad_counts_are_refused() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.mode_questions(), Some(&sample_questions()));
    let refused = |questions: ModeQuestionsMeta| {
        let mut w = sample_writer();
        w.mode_questions(&questions).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut bad = sample_questions();
    bad.modes[0].questions = 4;
    let e = refused(bad);
    assert!(e.contains("mode_questions: mode act has 4 questions among 3 examples"), "{e}");
    let mut bad = sample_questions();
    bad.modes.push(ModeQuestionCount { examples: 1, questions: 1 });
    let e = refused(bad);
    assert!(e.contains("mode_questions: 2 counts for 1 modes"), "{e}");
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.mode_questions(&sample_questions()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("mode questions were set without a selection section"), "{e}");
}

#[test]
fn screen_family_heads_round_trip_only_beside_a_screen_head_and_a_bad_one_is_refused() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.screen_families(), Some(&sample_families()));
    let refused = |families: ScreenFamiliesMeta| {
        let mut w = sample_writer();
        w.screen_families(&families).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut bad = sample_families();
    bad.heads[0].weights.pop();
    let e = refused(bad);
    assert!(e.contains("screen_families: head jailbreak has 15 weights for dimension 16"), "{e}");
    let mut bad = sample_families();
    bad.heads[0].threshold = f32::INFINITY;
    let e = refused(bad);
    assert!(e.contains("head jailbreak holds a value that is not a finite number"), "{e}");
    let mut bad = sample_families();
    bad.heads[0].lexical = None;
    let e = refused(bad);
    assert!(e.contains("head jailbreak has a triage floor but no lexical head"), "{e}");
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.screen_families(&sample_families()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("screen family heads were set without a screen section"), "{e}");
}

#[test]
fn the_request_contrast_round_trips_only_beside_a_screen_head_and_a_bad_one_is_refused() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.screen_request(), Some(&sample_request()));
    let refused = |request: ScreenRequestMeta| {
        let mut w = sample_writer();
        w.screen_request(&request).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut bad = sample_request();
    bad.head.weights.pop();
    let e = refused(bad);
    assert!(e.contains("screen_request: the request head has 7 weights for 2 x 4 buckets"), "{e}");
    let mut bad = sample_request();
    bad.threshold = f32::NAN;
    assert!(refused(bad).contains("screen_request: it holds a value that is not a finite number"));
    let mut bad = sample_request();
    bad.oof_planted_recall = 1.5;
    assert!(refused(bad).contains("oof_planted_recall 1.5 is not between 0 and 1"));
    let mut bad = sample_request();
    bad.coherence_weight = -1.0;
    assert!(refused(bad).contains("coherence_weight -1 is negative"));
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.screen_request(&sample_request()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("a request contrast was set without a screen section"), "{e}");
}

/// A version 14 index's request contrast reads, without the overlap weight it did not have.
#[test]
fn a_version_14_request_contrast_reads_with_no_overlap_weight() {
    let path = format!("{}/../../tests/fixtures/index_v14.bin", env!("CARGO_MANIFEST_DIR"));
    let index = Index::open(std::path::Path::new(&path), &OpenOptions::new()).unwrap();
    let request = index.screen_request().expect("the version 14 fixture has a request contrast");
    assert_eq!((request.coherence_weight, request.coherence_reach_bytes), (0.0, 0));
    assert_eq!(request.coherent_contrast(3.0, 0.5), 3.0);
    let current = sample_request();
    assert_eq!(current.coherent_contrast(3.0, 0.5), 1.0);
}

/// A version 16 index's triage reads, without a sentence threshold: it screens no sentence
/// pieces.
#[test]
fn a_version_16_triage_reads_with_no_sentence_threshold() {
    let path = format!("{}/../../tests/fixtures/index_v16.bin", env!("CARGO_MANIFEST_DIR"));
    let index = Index::open(std::path::Path::new(&path), &OpenOptions::new()).unwrap();
    let triage = index.screen_triage().expect("the version 16 fixture has a triage");
    assert_eq!(triage.sentence_threshold, None);
    assert_eq!((triage.sentence_texts, triage.sentence_benign_flagged), (0, 0.0));
    assert_eq!(triage.lexical_floor, sample_triage().lexical_floor);
}

#[test]
fn the_contrast_of_windows_is_the_top_one_over_the_mean_of_the_others() {
    assert_eq!(ScreenRequestMeta::contrast(&[]), None);
    assert_eq!(ScreenRequestMeta::contrast(&[3.0]), None, "one window stands out from nothing");
    assert_eq!(ScreenRequestMeta::contrast(&[-1.0, 4.0, -3.0]), Some((1, 6.0)));
    assert_eq!(ScreenRequestMeta::contrast(&[-2.0, -2.0]), Some((0, 0.0)), "the first of equals");
    assert_eq!(ScreenRequestMeta::contrast(&[5.0, 1.0, -0.5]), None, "the rest reads as a request");
}

#[test]
fn the_screen_section_round_trips_and_a_bad_one_is_refused() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.screen(), Some(&sample_screen()));
    let refused = |screen: ScreenMeta| {
        let mut w = sample_writer();
        w.screen(&screen).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut short = sample_screen();
    if let Some(h) = short.head.as_mut() {
        h.weights.pop();
    }
    let e = refused(short);
    assert!(e.contains("screen: head has 15 weights for screen vectors of width 16"), "{e}");
    let mut both = sample_screen();
    both.fallback_reason = Some("x".into());
    assert!(refused(both).contains("a head and a fallback reason at once"));
    let mut nan = sample_screen();
    if let Some(h) = nan.head.as_mut() {
        h.threshold = f32::NAN;
    }
    assert!(refused(nan).contains("non-finite"));
    let mut zero = sample_screen();
    zero.windowing.max_windows = 0;
    assert!(refused(zero).contains("windowing has a zero bound"));
}

#[test]
fn the_lexical_screen_round_trips_only_beside_a_head_and_a_bad_one_is_refused() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.screen_lexical(), Some(&sample_lexical()));
    let refused = |lexical: LexicalScreenMeta, screen: ScreenMeta| {
        let mut w = sample_writer();
        w.screen(&screen).unwrap().screen_lexical(&lexical).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut short = sample_lexical();
    short.weights.pop();
    let e = refused(short, sample_screen());
    assert!(
        e.contains("screen: lexical head has 7 weights for 4 buckets per group (want 8)"),
        "{e}"
    );
    let mut nan = sample_lexical();
    nan.bias = f32::NAN;
    assert!(refused(nan, sample_screen()).contains("lexical head has a non-finite weight"));
    let mut headless = sample_screen();
    headless.head = None;
    headless.fallback_reason = Some("too few patterns".into());
    let e = refused(sample_lexical(), headless);
    assert!(e.contains("a lexical head without the embedding head it adds to"), "{e}");
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.screen_lexical(&sample_lexical()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("without a screen section") || e.contains("metadata"), "{e}");
}

#[test]
fn late_interaction_round_trips_only_beside_a_selection_and_a_bad_one_is_refused() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    let late = index.late().unwrap();
    assert_eq!(late, &sample_late());
    assert_eq!((late.tools.items(), late.tools.doc_freq(5), late.tools.doc_freq(7)), (2, 2, 0));
    let refused = |late: LateMeta| {
        let mut w = sample_writer();
        w.late(&late).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut bad = sample_late();
    bad.tools.offsets.pop();
    let e = refused(bad);
    assert!(e.contains("late: 2 tools offsets for 2 tools"), "{e}");
    let mut bad = sample_late();
    bad.skills.scales.pop();
    let e = refused(bad);
    assert!(e.contains("late: skills: 2 tokens but 1 scales"), "{e}");
    let mut bad = sample_late();
    bad.blend = 1.5;
    assert!(refused(bad).contains("late: blend 1.5 is outside 0..=1"));
    let mut bad = sample_late();
    bad.tools.doc_freq.reverse();
    assert!(refused(bad).contains("late: tools token frequencies are not sorted by id"));
    let mut bad = sample_late();
    bad.skills.ids.pop();
    assert!(refused(bad).contains("late: skills: 2 tokens but 1 ids"));
    let mut bad = sample_late();
    bad.tools.ids[1] = 7;
    assert!(refused(bad).contains("late: tools: token id 7 has no document frequency"));
    // A version 11 index has no ids: it still opens, and the router weighs the task's side only.
    let mut old = sample_late();
    (old.tools.ids, old.skills.ids) = (Vec::new(), Vec::new());
    let mut w = sample_writer();
    w.late(&old).unwrap();
    let bytes = w.to_bytes().unwrap();
    let index = Index::from_bytes(&bytes, &OpenOptions::new()).unwrap();
    assert!(index.sections().iter().all(|s| s.kind != SectionKind::LateIds));
    assert_eq!(index.late().unwrap(), &old);
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.late(&sample_late()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("late interaction was set without a selection section"), "{e}");
}

#[test]
fn an_index_opened_from_a_file_reads_the_late_states_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("late.idx");
    sample_writer().write(&path).unwrap();
    let index = Index::open(&path, &OpenOptions::new()).unwrap();
    let late = index.late().unwrap();
    assert!(late.tools.states.is_mapped() && late.skills.states.is_mapped());
    assert_eq!(late, &sample_late());
    // Held in memory, the states are a copy, equal to the mapped ones.
    let held = Index::from_bytes(&std::fs::read(&path).unwrap(), &OpenOptions::new()).unwrap();
    assert!(!held.late().unwrap().tools.states.is_mapped());
    assert_eq!(held.late(), index.late());
    // Too few states for the tokens is refused from a file too, naming the section.
    let mut bad = sample_late();
    let short: Vec<i8> = bad.tools.states[1..].to_vec();
    bad.tools.states = short.into();
    let mut w = sample_writer();
    w.late(&bad).unwrap();
    w.write(&path).unwrap();
    let e = Index::open(&path, &OpenOptions::new()).unwrap_err().to_string();
    assert!(e.contains("late: tools: 4 tokens but 4 scales and 63 values"), "{e}");
}

#[test]
fn the_off_topic_check_round_trips_only_beside_a_selection_with_one_row_per_topic() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.off_topic(), Some(&sample_off_topic()));
    let refused = |off: OffTopicMeta| {
        let mut w = sample_writer();
        w.off_topic(&off).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut short = sample_off_topic();
    short.names.push("poems".into());
    let e = refused(short);
    assert!(
        e.contains(&format!("off_topic: {} floats for 3 topics of width {DIM}", 2 * DIM)),
        "{e}"
    );
    let mut nan = sample_off_topic();
    nan.margin = f32::NAN;
    let e = refused(nan);
    assert!(e.contains("off_topic: it holds a value that is not a finite number"), "{e}");
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.off_topic(&sample_off_topic()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("an off-topic check was set without a selection section"), "{e}");
}

#[test]
fn the_language_shift_round_trips_only_beside_a_selection_with_one_centroid_per_language() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.language_shift(), Some(&sample_language_shift()));
    let refused = |shift: LanguageShiftMeta| {
        let mut w = sample_writer();
        w.language_shift(&shift).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut more = sample_language_shift();
    more.languages.push("fr".into());
    let e = refused(more);
    assert!(
        e.contains(&format!("language_shift: {} floats and 2 counts for 3 languages", 2 * DIM)),
        "{e}"
    );
    let mut beyond = sample_language_shift();
    beyond.catalog_language = Some(2);
    assert!(refused(beyond).contains("language_shift: catalog language Some(2) of 2"));
    let mut flat = sample_language_shift();
    flat.full_margin = 0.0;
    assert!(refused(flat).contains("the full margin is not positive"));
    let mut unknown = sample_language_shift();
    unknown.unmoved = vec!["xx".into()];
    let e = refused(unknown);
    assert!(
        e.contains(r#"language_shift: unmoved language "xx" is not among ["en", "es"]"#),
        "{e}"
    );
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.language_shift(&sample_language_shift()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("a language shift was set without a selection section"), "{e}");
}

#[test]
fn the_query_shift_round_trips_only_beside_a_selection_with_one_value_per_row() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.query_shift(), Some(&sample_shift()));
    let refused = |shift: QueryShiftMeta| {
        let mut w = sample_writer();
        w.query_shift(&shift).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut short = sample_shift();
    short.tools.pop();
    let e = refused(short);
    assert!(e.contains("query_shift: 2 tools values for 3 tools rows"), "{e}");
    let mut nan = sample_shift();
    nan.skills[0] = f32::NAN;
    let e = refused(nan);
    assert!(e.contains("query_shift: a skills value or the strength is not a finite"), "{e}");
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.query_shift(&sample_shift()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("a query shift was set without a selection section"), "{e}");
}

#[test]
fn the_screen_triage_round_trips_only_beside_a_lexical_screen_with_a_finite_floor() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert_eq!(index.screen_triage(), Some(&sample_triage()));
    let refused = |triage: ScreenTriageMeta| {
        let mut w = sample_writer();
        w.screen_triage(&triage).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let e = refused(ScreenTriageMeta { lexical_floor: f32::NAN, ..sample_triage() });
    assert!(e.contains("screen_triage: the lexical floor NaN is not a finite number"), "{e}");
    let e = refused(ScreenTriageMeta { oof_missed: 1.5, ..sample_triage() });
    assert!(e.contains("screen_triage: oof_missed 1.5 is not a share between 0 and 1"), "{e}");
    let e =
        refused(ScreenTriageMeta { sentence_threshold: Some(f32::INFINITY), ..sample_triage() });
    assert!(e.contains("screen_triage: the sentence threshold inf is not a finite number"), "{e}");
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.screen_triage(&sample_triage()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("a screen triage was set without a lexical screen"), "{e}");
}

#[test]
fn the_adapter_section_round_trips_and_a_bad_one_is_refused() {
    let dim = 16;
    let adapter = AdapterMeta {
        id: "0123456789abcdef".into(),
        rank: 2,
        u: vec![0.5; dim * 2],
        v: vec![-0.25; dim * 2],
        trained_on: vec!["metatool".into()],
        info_json: "{}".into(),
    };
    let with = |a: &AdapterMeta| {
        let mut w = sample_writer();
        w.adapter(a).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new())
    };
    let index = with(&adapter).unwrap();
    assert_eq!(index.adapter(), Some(&adapter));
    let plain =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert!(plain.adapter().is_none(), "an index without an adapter has no section");
    let mut short = adapter.clone();
    short.v.pop();
    let e = with(&short).unwrap_err().to_string();
    assert!(e.contains("adapter: factors of 32 and 31 values"), "{e}");
    let mut nan = adapter.clone();
    nan.u[3] = f32::NAN;
    assert!(with(&nan).unwrap_err().to_string().contains("NaN or infinite"));
    let mut wide = adapter;
    wide.rank = 17;
    assert!(with(&wide).unwrap_err().to_string().contains("rank 17 is outside 1..=16"));
}

#[test]
fn selection_round_trips_and_a_rewrite_is_byte_identical() {
    let bytes = sample_writer().to_bytes().unwrap();
    let index = Index::from_bytes(&bytes, &OpenOptions::new()).unwrap();
    assert_eq!(index.selection(), Some(&sample_selection()));
    let again = IndexWriter::from_index(&index).unwrap().to_bytes().unwrap();
    assert_eq!(again, bytes);
}

#[test]
fn an_inconsistent_selection_section_is_refused() {
    let mut sel = sample_selection();
    sel.tools_lexical.doc_len.pop();
    let mut w = sample_writer();
    w.selection(&sel).unwrap();
    let e = Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err();
    assert!(e.to_string().contains("selection: tools: 1 document lengths for 2 items"), "{e}");
    let mut sel = sample_selection();
    sel.hints = vec![("interactive".into(), "plan".into())];
    let mut w = sample_writer();
    w.selection(&sel).unwrap();
    let e = Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err();
    assert!(e.to_string().contains("hint \"interactive\" names mode \"plan\""), "{e}");
    let refused = |change: fn(&mut ToolServers)| {
        let mut sel = sample_selection();
        change(&mut sel.servers);
        let mut w = sample_writer();
        w.selection(&sel).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let e = refused(|s| s.of_tool.push(None));
    assert!(e.contains("selection: 3 tool servers for 2 tools"), "{e}");
    let e = refused(|s| s.of_tool[1] = Some(2));
    assert!(e.contains("selection: a tool names a server past 2"), "{e}");
    let e = refused(|s| s.weight = f32::NAN);
    assert!(e.contains("selection: the server weight NaN is not within 0..=1"), "{e}");
}

#[test]
fn a_selection_written_before_version_22_reads_with_no_servers() {
    let dir = format!("{}/../../tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    for v in 3..=21 {
        let path = format!("{dir}/index_v{v}.bin");
        let index = Index::open(std::path::Path::new(&path), &OpenOptions::new()).unwrap();
        let Some(selection) = index.selection() else { continue };
        assert_eq!(selection.servers, ToolServers::default(), "{path}");
    }
    let index =
        Index::open(std::path::Path::new(&format!("{dir}/index_v21.bin")), &OpenOptions::new())
            .unwrap();
    assert!(index.selection().is_some(), "the version 21 fixture has a selection section");
}

/// The message of opening a written index, without the path prefix and rebuild advice.
fn cascade_err(w: &IndexWriter) -> String {
    let e = Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err();
    let m = e.to_string();
    let start = m.find("(cascade: ").map(|i| i + 1).unwrap_or(0);
    let end = m.rfind("); rebuild").unwrap_or(m.len());
    m[start..end].to_string()
}

#[test]
fn cascade_round_trips_as_views_over_one_matrix() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    let space = index.static_space().unwrap();
    assert_eq!(space.meta, &sample_cascade());
    assert_eq!((space.pieces.rows(), space.tools.rows()), (2, 3));
    assert_eq!((space.skills.rows(), space.modes.rows()), (1, 1));
    assert_eq!(space.pieces.row(1), unit(9).as_slice());
    assert_eq!(space.tools.row(0), unit(10).as_slice());
    assert_eq!(space.modes.row(0), unit(14).as_slice());
}

#[test]
fn an_index_without_cascade_has_no_static_space() {
    let mut w = sample_writer();
    let mut plain = IndexWriter::new(DIM, [0xab; 16]);
    let rows = |seeds: &[u32]| seeds.iter().flat_map(|&s| unit(s)).collect::<Vec<f32>>();
    for (k, seeds) in [
        (SectionKind::Tools, &[1, 2, 3][..]),
        (SectionKind::Skills, &[4]),
        (SectionKind::Modes, &[5]),
        (SectionKind::Injections, &[6]),
        (SectionKind::Benign, &[7]),
    ] {
        plain.matrix(k, rows(seeds)).unwrap();
    }
    let texts: Vec<String> = (0..7).map(|i| format!("t{i}")).collect();
    plain.strings(texts).meta(&sample_meta()).unwrap();
    let index = Index::from_bytes(&plain.to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    assert!(index.static_space().is_none());
    assert!(plain.to_bytes().unwrap().len() < w.to_bytes().unwrap().len());
    // Same content, same bytes, cascade included.
    assert_eq!(w.to_bytes().unwrap(), sample_writer().to_bytes().unwrap());
    w.meta(&sample_meta()).unwrap();
}

#[test]
fn cascade_rows_must_cover_pieces_and_items() {
    let mut w = sample_writer();
    let rows: Vec<f32> = (0..6).flat_map(unit).collect();
    w.cascade(rows, &sample_cascade()).unwrap();
    assert_eq!(
        cascade_err(&w),
        "cascade: static_rows has 6 rows, expected 7 (2 pieces + the tools, skills and modes rows)"
    );
}

#[test]
fn cascade_piece_ids_must_ascend_and_weights_match() {
    let rows: Vec<f32> = (8..15).flat_map(unit).collect();
    let mut w = sample_writer();
    w.cascade(rows.clone(), &CascadeMeta { piece_ids: vec![2023, 101], ..sample_cascade() })
        .unwrap();
    assert_eq!(cascade_err(&w), "cascade: piece ids are not strictly ascending at 2023 101");
    let mut w = sample_writer();
    w.cascade(rows.clone(), &CascadeMeta { piece_weights: vec![1.0], ..sample_cascade() }).unwrap();
    assert_eq!(cascade_err(&w), "cascade: 1 piece weights for 2 pieces");
    let mut w = sample_writer();
    w.cascade(rows, &CascadeMeta { piece_weights: vec![1.0, f32::NAN], ..sample_cascade() })
        .unwrap();
    assert_eq!(cascade_err(&w), "cascade: piece weight NaN is not a finite non-negative number");
}

/// One suite, two ways in: from bytes in memory and through mmap of a written file.
#[test]
fn thinking_section_round_trips_and_is_checked() {
    let b = sample_writer().to_bytes().unwrap();
    let index = Index::from_bytes(&b, &OpenOptions::new()).unwrap();
    assert_eq!(index.thinking(), Some(&sample_thinking()));
    assert_eq!(index.matrix(SectionKind::ThinkingRows).rows(), 3);
    // Rewriting through `from_index` keeps every byte.
    assert_eq!(IndexWriter::from_index(&index).unwrap().to_bytes().unwrap(), b);

    let mut bad = sample_thinking();
    bad.modes[1].row_count = 1;
    let mut w = sample_writer();
    w.thinking(
        (0..3)
            .flat_map(|_| {
                let mut r = vec![0.0f32; DIM];
                r[0] = 1.0;
                r
            })
            .collect(),
        &bad,
    )
    .unwrap();
    let err = Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err();
    assert!(
        err.to_string().contains("thinking: the modes claim 2 rows, thinking_rows has 3"),
        "{err}"
    );

    let mut bad = sample_thinking();
    bad.default_mode = "nope".into();
    let mut w = sample_writer();
    w.thinking(vec![0.0; 3 * DIM], &bad).unwrap();
    let err = Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err();
    assert!(err.to_string().contains("default mode \"nope\""), "{err}");
}

#[test]
fn the_prompts_section_round_trips_a_rewrite_keeps_it_and_an_index_without_it_has_none() {
    let bytes = sample_writer().to_bytes().unwrap();
    let index = Index::from_bytes(&bytes, &OpenOptions::new()).unwrap();
    let constitution = index.prompts().and_then(|p| p.constitution.as_deref());
    assert_eq!(constitution, Some("You are the front desk's agent.\n"));
    // A rewrite (as `fit --out` makes) carries it over, byte for byte.
    let again = IndexWriter::from_index(&index).unwrap().to_bytes().unwrap();
    assert_eq!(again, bytes);
    let without = sample_writer_without_prompts().to_bytes().unwrap();
    let index = Index::from_bytes(&without, &OpenOptions::new()).unwrap();
    assert!(index.prompts().is_none());
}

#[test]
fn family_hidden_layers_round_trip_only_beside_family_heads_and_a_bad_one_is_refused() {
    let index =
        Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new()).unwrap();
    let hidden = index.screen_family_hidden().unwrap();
    assert_eq!(hidden, &sample_family_hidden());
    // `sum_j outputs[j] * relu(weights_j . v + biases[j])`: unit 0 reads `unit(23)` as 1.1,
    // unit 1 reads it as -0.2 + (unit(24) . unit(23)) and is off when that is negative.
    let layer = &hidden.layers[0];
    let v = unit(23);
    let second = (dot(&unit(24), &v) - 0.2).max(0.0);
    assert!((layer.logit(&v) - (1.5 * 1.1 - 0.5 * second)).abs() < 1e-5);
    let refused = |hidden: ScreenFamilyHiddenMeta| {
        let mut w = sample_writer();
        w.screen_family_hidden(&hidden).unwrap();
        Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err().to_string()
    };
    let mut short = sample_family_hidden();
    short.layers[0].weights.pop();
    let e = refused(short);
    assert!(
        e.contains(&format!(
            "screen_family_hidden: \"jailbreak\": {} weights, 2 biases and 2 outputs for width {DIM}",
            2 * DIM - 1
        )),
        "{e}"
    );
    let mut stranger = sample_family_hidden();
    stranger.layers[0].family = "exfiltration".into();
    assert!(refused(stranger).contains("a layer for \"exfiltration\", which has no family head"));
    let mut nan = sample_family_hidden();
    nan.layers[0].outputs[1] = f32::NAN;
    assert!(refused(nan).contains("\"jailbreak\": a value is not a finite number"));
    let mut w = sample_writer_without_prompts();
    w.screen_family_hidden(&sample_family_hidden()).unwrap();
    assert!(Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).is_ok());
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.screen_family_hidden(&sample_family_hidden()).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("family hidden layers were set without family heads"), "{e}");
}

#[test]
fn a_screen_layer_doubles_every_heads_width_and_a_head_of_the_old_width_is_refused() {
    let bytes = sample_layered_writer().to_bytes().unwrap();
    let index = Index::from_bytes(&bytes, &OpenOptions::new()).unwrap();
    assert_eq!(index.screen_layer(), Some(8));
    assert_eq!(index.screen_width(), 2 * DIM);
    assert_eq!(index.dim(), DIM, "the matrices keep the model's width");
    // A rewrite (as `fit --out` makes) carries it over, byte for byte.
    assert_eq!(IndexWriter::from_index(&index).unwrap().to_bytes().unwrap(), bytes);
    // Without the section, a screen vector is the final vector alone.
    let plain = Index::from_bytes(&sample_writer().to_bytes().unwrap(), &OpenOptions::new());
    let plain = plain.unwrap();
    assert_eq!((plain.screen_layer(), plain.screen_width()), (None, DIM));
    // The heads of a final-vector screen under a layer: refused, naming the width.
    let mut w = sample_writer();
    w.screen_layer(&ScreenLayerMeta { layer: 8 }).unwrap();
    let e = Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "screen: head has {DIM} weights for screen vectors of width {}",
            2 * DIM
        )),
        "{e}"
    );
    let mut w = sample_layered_writer();
    w.screen_layer(&ScreenLayerMeta { layer: 0 }).unwrap();
    let e = Index::from_bytes(&w.to_bytes().unwrap(), &OpenOptions::new()).unwrap_err();
    assert!(e.to_string().contains("screen_layer: layer 0 is the token embeddings"), "{e}");
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    w.screen_layer(&ScreenLayerMeta { layer: 8 }).unwrap();
    w.matrix(SectionKind::Tools, unit(1)).unwrap();
    w.strings(vec!["read a file".into()]);
    w.meta(&sample_meta()).unwrap();
    let e = w.to_bytes().map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("a screen layer was set without a screen section"), "{e}");
}

#[test]
fn a_language_shift_written_before_version_21_reads_with_english_unmoved() {
    let dir = format!("{}/../../tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    for v in 18..=20 {
        let path = format!("{dir}/index_v{v}.bin");
        let index = Index::open(std::path::Path::new(&path), &OpenOptions::new()).unwrap();
        let shift = index.language_shift().unwrap_or_else(|| panic!("{path}: no language shift"));
        assert_eq!(shift.unmoved, vec!["en".to_string()], "{path}");
    }
}
