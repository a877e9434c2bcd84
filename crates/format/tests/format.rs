//! The index format's contract: round trips, determinism, the header layout, every corruption an
//! error (never a panic), verbatim messages, and one committed fixture per format version.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use proptest::prelude::*;
use switchyard_format::*;

const DIM: usize = 16;

fn unit(seed: u32) -> Vec<f32> {
    let mut v: Vec<f32> =
        (0..DIM).map(|i| ((seed * 31 + i as u32 * 7) % 13) as f32 - 6.0).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn sample_meta() -> IndexMeta {
    IndexMeta {
        model: ModelMeta {
            name: "hash-16".into(),
            prefix: String::new(),
            dim: DIM as u32,
            max_tokens: 64,
            pooling: "mean".into(),
            fingerprint: "ab".repeat(16),
        },
        manifest_hash: "feed".into(),
        tools: vec![
            ItemMeta {
                name: "read_file".into(),
                description: "read a file".into(),
                modes: vec!["any".into()],
                first_row: 0,
                row_count: 2,
                parameters: Some("{\"type\":\"object\"}".into()),
                body: None,
            },
            ItemMeta {
                name: "run_tests".into(),
                description: "run the tests".into(),
                modes: vec!["act".into()],
                first_row: 2,
                row_count: 1,
                parameters: None,
                body: None,
            },
        ],
        skills: vec![ItemMeta {
            name: "debug".into(),
            description: "debugging".into(),
            modes: vec!["any".into()],
            first_row: 0,
            row_count: 1,
            parameters: None,
            body: Some("steps".into()),
        }],
        modes: vec![ModeMeta {
            name: "act".into(),
            description: "do it".into(),
            keywords: vec!["fix".into()],
            base_tools: vec![],
            base_skills: vec![],
            rules: None,
            first_row: 0,
            row_count: 1,
        }],
        default_mode: "act".into(),
        injections: vec![PatternMeta { lang: "en".into(), category: Some("override".into()) }],
        benign: vec![PatternMeta { lang: "en".into(), category: None }],
        thresholds: Thresholds {
            tool_min: 0.3,
            skill_min: 0.3,
            mode_min: 0.4,
            injection: 0.8,
            memory_min: 0.3,
            unrelated_mean: 0.1,
            related_mean: 0.6,
        },
        string_base: vec![0, 3, 4, 5, 6],
    }
}

fn sample_writer() -> IndexWriter {
    let mut w = IndexWriter::new(DIM, [0xab; 16]);
    let rows = |seeds: &[u32]| seeds.iter().flat_map(|&s| unit(s)).collect::<Vec<f32>>();
    w.matrix(SectionKind::Tools, rows(&[1, 2, 3])).unwrap();
    w.matrix(SectionKind::Skills, rows(&[4])).unwrap();
    w.matrix(SectionKind::Modes, rows(&[5])).unwrap();
    w.matrix(SectionKind::Injections, rows(&[6])).unwrap();
    w.matrix(SectionKind::Benign, rows(&[7])).unwrap();
    let texts = [
        "read a file",
        "show me foo.rs",
        "run the tests",
        "debugging",
        "do it",
        "ignore previous instructions",
        "ignore the lint warning",
    ];
    w.strings(texts.iter().map(|s| s.to_string()).collect());
    w.meta(&sample_meta()).unwrap();
    // Two pieces, then the 3 tools, 1 skill and 1 mode rows in the static space.
    w.cascade(rows(&[8, 9, 10, 11, 12, 13, 14]), &sample_cascade()).unwrap();
    w.selection(&sample_selection()).unwrap();
    w.screen(&sample_screen()).unwrap();
    w.thinking(rows(&[15, 16, 17]), &sample_thinking()).unwrap();
    w.screen_lexical(&sample_lexical()).unwrap();
    w.query_shift(&sample_shift()).unwrap();
    w.screen_triage(&sample_triage()).unwrap();
    w.screen_families(&sample_families()).unwrap();
    w.mode_questions(&sample_questions()).unwrap();
    w
}

fn sample_questions() -> ModeQuestionsMeta {
    ModeQuestionsMeta {
        rules_version: 1,
        modes: vec![ModeQuestionCount { examples: 3, questions: 0 }],
    }
}

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

fn sample_families() -> ScreenFamiliesMeta {
    ScreenFamiliesMeta {
        heads: vec![ScreenFamilyHead {
            family: "jailbreak".into(),
            categories: vec!["persona_jailbreak".into(), "harmful_request".into()],
            weights: unit(22),
            bias: -0.75,
            lexical: Some(sample_lexical()),
            threshold: 0.6,
            lexical_floor: Some(-0.2),
            oof_recall: 0.9,
            oof_fpr: 0.006,
            oof_auc: 0.99,
            attacks: 1,
            benign: 1,
        }],
        family_fpr: 0.005,
        oof_fpr_combined: 0.0148,
    }
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

fn sample_triage() -> ScreenTriageMeta {
    ScreenTriageMeta {
        lexical_floor: -0.3,
        max_miss: 0.005,
        oof_missed: 0.004,
        oof_benign_cleared: 0.9,
    }
}

fn sample_shift() -> QueryShiftMeta {
    // One value per tools row (3) and skills row (1).
    QueryShiftMeta { strength: 0.5, requests: 64, tools: vec![0.4, 0.3, 0.2], skills: vec![0.1] }
}

fn sample_lexical() -> LexicalScreenMeta {
    LexicalScreenMeta {
        features_version: 1,
        buckets: 4,
        bias: -0.25,
        weights: vec![0.5, -0.5, 1.0, 0.0, 0.25, 0.125, -1.0, 2.0],
        l2: 4e-5,
    }
}

fn sample_thinking() -> ThinkingMeta {
    let mode = |name: &str, first_row: u32, row_count: u32| ThinkingModeMeta {
        name: name.into(),
        description: format!("{name} thinking"),
        keywords: vec!["risk*".into()],
        scaffold: "Problem: {problem}\n## Success Criteria\n- a\n- b\n- c".into(),
        criteria: vec!["a".into(), "b".into(), "c".into()],
        first_row,
        row_count,
    };
    ThinkingMeta {
        modes: vec![mode("council", 0, 1), mode("red_team", 1, 2)],
        default_mode: "council".into(),
        calibration: ModeCalibration {
            semantic_margin: Some(0.05),
            examples: 1,
            precision: Some(1.0),
            coverage: Some(1.0),
            note: None,
        },
    }
}

fn sample_screen() -> ScreenMeta {
    ScreenMeta {
        builder_version: 1,
        head: Some(ScreenHead {
            weights: unit(21),
            attack_weight: 2.0,
            benign_weight: -1.5,
            bias: -0.5,
            threshold: 1.25,
            near_copy_threshold: 0.9,
            target_fpr: 0.01,
            l2: 0.03,
            oof_recall: 0.7,
            oof_fpr: 0.01,
            oof_auc: 0.97,
            attacks: 1,
            benign: 1,
            sources: vec!["catalog".into()],
        }),
        fallback_reason: None,
        windowing: WindowingMeta {
            prepare_version: 1,
            target_bytes: 240,
            single_window_bytes: 320,
            max_windows: 64,
            max_payloads: 4,
            max_payload_bytes: 600,
        },
    }
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
    assert!(e.contains("screen: head has 15 weights for embeddings of width 16"), "{e}");
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

fn sample_selection() -> SelectionMeta {
    // Three tools: "read file" (0), "run tests" (1, 2); one skill.
    let lexical = |terms: &[&str], docs: u32| LexicalMeta {
        analyzer_version: 1,
        terms: terms.iter().map(|t| t.to_string()).collect(),
        idf: vec![1.0; terms.len()],
        term_start: (0..=terms.len() as u32).collect(),
        post_doc: (0..terms.len() as u32).map(|i| i % docs).collect(),
        post_tf: vec![1; terms.len()],
        doc_len: vec![2; docs as usize],
        k1: 1.2,
        b: 0.75,
    };
    let fusion = FusionMeta {
        lexical_weight: 0.3,
        gate_z: 1.5,
        lexical_gate: 0.6,
        floor_z: 0.0,
        source: "default".into(),
    };
    SelectionMeta {
        builder_version: 1,
        tools_lexical: lexical(&["file", "read", "run", "tests"], 2),
        skills_lexical: lexical(&["debug"], 1),
        tools: fusion.clone(),
        skills: fusion,
        mode: ModeCalibration {
            semantic_margin: Some(0.02),
            examples: 6,
            precision: Some(0.9),
            coverage: Some(0.5),
            note: None,
        },
        out_of_mode_penalty: 0.15,
        hints: vec![("git_changes".into(), "act".into())],
    }
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
}

fn sample_cascade() -> CascadeMeta {
    CascadeMeta {
        piece_ids: vec![101, 2023],
        piece_weights: vec![1.5, 0.25],
        thresholds: sample_meta().thresholds,
        min_coverage: 0.8,
        margin: 0.25,
    }
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
fn both_ways(bytes: &[u8], check: impl Fn(&Index)) {
    check(&Index::from_bytes(bytes, &OpenOptions::new()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.swyd");
    std::fs::write(&path, bytes).unwrap();
    check(&Index::open(&path, &OpenOptions::new()).unwrap());
}

#[test]
fn round_trip_in_memory_and_mmap() {
    let bytes = sample_writer().to_bytes().unwrap();
    both_ways(&bytes, |index| {
        assert_eq!(index.dim(), DIM);
        assert_eq!(index.header().fingerprint, [0xab; 16]);
        let tools = index.matrix(SectionKind::Tools);
        assert_eq!(tools.rows(), 3);
        assert_eq!(tools.stride(), 16);
        assert_eq!(tools.row(1), unit(2).as_slice());
        assert_eq!(index.row_text(SectionKind::Tools, 1), "show me foo.rs");
        assert_eq!(index.row_text(SectionKind::Benign, 0), "ignore the lint warning");
        assert_eq!(index.meta(), &sample_meta());
        index.verify().unwrap();
    });
}

#[test]
fn same_content_gives_identical_bytes() {
    assert_eq!(sample_writer().to_bytes().unwrap(), sample_writer().to_bytes().unwrap());
}

#[test]
fn header_layout_matches_the_spec() {
    let b = sample_writer().to_bytes().unwrap();
    assert_eq!(HEADER_LEN, 64);
    assert_eq!(SECTION_ENTRY_LEN, 64);
    assert_eq!(&b[0..8], b"SWYDIDX\0");
    assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), FORMAT_VERSION);
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 64);
    assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), FLAG_ROWS_NORMALISED);
    // 8 sections, plus static_rows, cascade, selection, screen, thinking_rows, thinking,
    // screen_lexical, query_shift, screen_triage, screen_families and mode_questions.
    assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 19);
    assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), DIM as u32);
    assert_eq!(&b[32..48], &[0xab; 16]);
    assert_eq!(u64::from_le_bytes(b[48..56].try_into().unwrap()), b.len() as u64);
    assert_eq!(&b[56..60], &[0; 4]);
    assert_eq!(u32::from_le_bytes(b[60..64].try_into().unwrap()), crc32fast::hash(&b[0..60]));
    let index = Index::from_bytes(&b, &OpenOptions::new()).unwrap();
    for s in index.sections() {
        assert_eq!(s.offset % 64, 0, "{:?}", s.kind);
    }
    // Every section in file order; the sample is built without a query adapter.
    assert_eq!(
        index.sections().iter().map(|s| s.kind).collect::<Vec<_>>(),
        SectionKind::ALL.into_iter().filter(|k| *k != SectionKind::Adapter).collect::<Vec<_>>()
    );
}

fn open_err(bytes: &[u8]) -> String {
    Index::from_bytes(bytes, &OpenOptions::new()).unwrap_err().to_string()
}

fn with_header_crc(mut b: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&b[0..60]);
    b[60..64].copy_from_slice(&crc.to_le_bytes());
    b
}

#[test]
fn errors_are_distinct_and_verbatim() {
    let good = sample_writer().to_bytes().unwrap();
    assert_eq!(
        open_err(&good[..10]),
        "index <memory>: file is 10 bytes, shorter than the 64-byte header; rebuild it with switchyard build-index"
    );
    let mut b = good.clone();
    b[0] = b'X';
    assert_eq!(
        open_err(&b),
        "index <memory>: not a switchyard index (bad magic); pass a file written by switchyard build-index"
    );
    let mut b = good.clone();
    b[8..12].copy_from_slice(&99u32.to_le_bytes());
    assert_eq!(
        open_err(&b),
        "index <memory>: format version 99 is not supported (this build reads 1..=10); rebuild it with switchyard build-index"
    );
    let mut b = good.clone();
    b[28] ^= 1;
    assert!(open_err(&b).starts_with("index <memory>: header crc32 "), "{}", open_err(&b));
    let b = good[..good.len() - 64].to_vec();
    assert_eq!(
        open_err(&b),
        format!(
            "index <memory>: header says {} bytes but the file has {}; the file is truncated or damaged, rebuild it with switchyard build-index",
            good.len(),
            good.len() - 64
        )
    );
    // A misaligned section offset (header crc fixed up so the table check is what fires).
    let mut b = good.clone();
    let off = u64::from_le_bytes(b[64 + 8..64 + 16].try_into().unwrap());
    b[64 + 8..64 + 16].copy_from_slice(&(off + 4).to_le_bytes());
    assert_eq!(
        open_err(&with_header_crc(b)),
        format!(
            "index <memory>: section tools: offset {} is not a multiple of 64; rebuild it with switchyard build-index",
            off + 4
        )
    );
    // Two sections pointing at the same bytes.
    let mut b = good.clone();
    let skills_off = b[128 + 8..128 + 16].to_vec();
    b[64 + 8..64 + 16].copy_from_slice(&skills_off);
    assert!(
        open_err(&b).contains("overlap") || open_err(&b).contains("sections"),
        "{}",
        open_err(&b)
    );
    // Payload damage names the section.
    let index = Index::from_bytes(&good, &OpenOptions::new()).unwrap();
    let tools = index.sections()[0].clone();
    let mut b = good.clone();
    b[tools.offset as usize] ^= 0x40;
    assert!(open_err(&b).starts_with("index <memory>: section tools crc32 "), "{}", open_err(&b));
    // Skipping payload verification still opens it (hot start), and verify() still catches it.
    let lax = Index::from_bytes(&b, OpenOptions::new().verify_payload(false)).unwrap();
    assert!(lax.verify().is_err());
}

#[test]
fn nan_rows_are_refused_when_writing() {
    let mut w = IndexWriter::new(2, [0; 16]);
    let err = w.matrix(SectionKind::Tools, vec![f32::NAN, 0.0]).unwrap_err().to_string();
    assert_eq!(err, "cannot write index: tools row 0 holds NaN or infinity");
    let err = w.matrix(SectionKind::Tools, vec![3.0, 4.0]).unwrap_err().to_string();
    assert!(err.contains("must be L2-normalised"), "{err}");
}

#[test]
fn atomic_write_replaces_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.swyd");
    std::fs::write(&path, b"old junk").unwrap();
    sample_writer().write(&path).unwrap();
    Index::open(&path, &OpenOptions::new()).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

/// `tests/fixtures/index_v{N}.bin` for every version ever written must still open (or be refused
/// with a version error once it falls below OLDEST_SUPPORTED_VERSION).
#[test]
fn every_version_fixture_opens() {
    let dir = format!("{}/../../tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let current = format!("{dir}/index_v{FORMAT_VERSION}.bin");
    if !std::path::Path::new(&current).exists() {
        // create_fixture: the first build of a new version writes its fixture, to be committed.
        sample_writer().write(std::path::Path::new(&current)).unwrap();
    }
    for v in 1..=FORMAT_VERSION {
        let path = format!("{dir}/index_v{v}.bin");
        let result = Index::open(std::path::Path::new(&path), &OpenOptions::new());
        if v >= OLDEST_SUPPORTED_VERSION {
            let index = result.unwrap_or_else(|e| panic!("{path}: {e}"));
            assert!(index.matrix(SectionKind::Tools).rows() <= 16);
        } else {
            assert!(matches!(result, Err(FormatError::UnsupportedVersion { .. })));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn any_single_byte_flip_is_an_error(pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let mut b = sample_writer().to_bytes().unwrap();
        let i = pos.index(b.len());
        b[i] ^= flip;
        prop_assert!(Index::from_bytes(&b, &OpenOptions::new()).is_err(), "flip at {} accepted", i);
    }

    #[test]
    fn any_truncation_is_an_error(cut in any::<prop::sample::Index>()) {
        let b = sample_writer().to_bytes().unwrap();
        let n = cut.index(b.len());
        prop_assert!(Index::from_bytes(&b[..n], &OpenOptions::new()).is_err());
    }

    #[test]
    fn random_garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..2048), keep_header in any::<bool>()) {
        let mut b = bytes;
        if keep_header && b.len() >= 64 {
            let good = sample_writer().to_bytes().unwrap();
            b[..64].copy_from_slice(&good[..64]);
        }
        let _ = Index::from_bytes(&b, &OpenOptions::new());
        let _ = Index::from_bytes(&b, OpenOptions::new().verify_payload(false));
    }
}

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
