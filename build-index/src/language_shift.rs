//! The `language_shift` section: where ordinary requests in each language lie, and the
//! catalog's language.
//!
//! A multilingual model (multilingual-e5) puts a request in one language a common offset away
//! from the same request in another: a Spanish task scores an English catalog's rows through
//! that offset, and the tool it needs falls out of the top 3 ("saca la etiqueta de envío" and
//! `print_shipping_label`). The builder embeds [`REQUESTS_BY_LANGUAGE`] as tasks (ordinary
//! requests of every kind, written for this purpose and never used anywhere else; the same
//! requests in every language where they fit) and keeps each language's centroid. The router
//! reads a task's language as its nearest centroid and, when that is not the catalog's, scores
//! the tools with the task moved by the offset between the two centroids
//! ([`switchyard_format::LanguageShiftMeta`]). Nothing depends on the catalog but its language,
//! read from the words of its tools ([`catalog_language`]); a catalog whose language is not
//! clear gets no shift.

use switchyard_embed::Embedder;
use switchyard_format::LanguageShiftMeta;
use switchyard_manifest::Catalog;

/// Ordinary requests per language: work and private, short and long. Only their centroids
/// are used.
pub const REQUESTS_BY_LANGUAGE: &[(&str, &[&str])] = &[
    (
        "en",
        &[
            "can you summarise this document for me",
            "send the weekly update to the whole team",
            "book a table for four on Friday evening",
            "what's the weather going to be like tomorrow",
            "find me a cheap flight to Lisbon in March",
            "remind me to call the dentist at 3",
            "translate this paragraph into Spanish",
            "show me last month's sales by region",
            "cancel my subscription",
            "why is my laptop so slow",
            "add milk and eggs to the shopping list",
            "I need to reset my password",
            "check if the server is still running",
            "list every customer who hasn't paid yet",
            "I'd like to return the shoes I bought last week because they are too small",
            "is there a faster way to get to the airport",
        ],
    ),
    (
        "pt",
        &[
            "resuma este relatório em três frases",
            "quanto custa enviar um pacote para o Porto",
            "marca uma reunião com o fornecedor na segunda",
            "preciso de uma fatura da minha última compra",
            "podes verificar se o servidor ainda está a funcionar",
            "manda a atualização semanal para a equipa toda",
            "cancela a minha assinatura, por favor",
            "porque é que o meu computador está tão lento",
            "adiciona leite e ovos à lista de compras",
            "quero devolver os sapatos que comprei na semana passada",
            "mostra-me as vendas do mês passado por região",
            "lembra-me de ligar ao dentista às três",
            "qual vai ser o tempo amanhã em Lisboa",
            "preciso de redefinir a minha palavra-passe",
            "vê quais clientes ainda não pagaram",
            "traduz este parágrafo para inglês",
        ],
    ),
    (
        "es",
        &[
            "¿puedes revisar este contrato antes de firmarlo?",
            "reserva un hotel cerca de la estación",
            "¿cuánto gasté en restaurantes este mes?",
            "avisa al equipo de que hoy llego tarde",
            "mándame el informe semanal de ventas",
            "cancela mi suscripción",
            "por qué mi portátil va tan lento",
            "añade leche y huevos a la lista de la compra",
            "necesito restablecer mi contraseña",
            "comprueba si el servidor sigue funcionando",
            "quiero devolver los zapatos que compré la semana pasada",
            "enséñame las ventas del mes pasado por región",
            "recuérdame llamar al dentista a las tres",
            "qué tiempo va a hacer mañana",
            "busca un vuelo barato a Lisboa en marzo",
            "traduce este párrafo al inglés",
        ],
    ),
    (
        "fr",
        &[
            "peux-tu m'aider à rédiger un courriel au propriétaire",
            "trouve-moi les horaires du train pour Lyon",
            "combien de commandes avons-nous reçues hier",
            "mets à jour la liste des participants",
            "envoie le point hebdomadaire à toute l'équipe",
            "annule mon abonnement",
            "pourquoi mon ordinateur est si lent",
            "ajoute du lait et des œufs à la liste de courses",
            "je dois réinitialiser mon mot de passe",
            "vérifie si le serveur tourne encore",
            "je voudrais rendre les chaussures achetées la semaine dernière",
            "montre-moi les ventes du mois dernier par région",
            "rappelle-moi d'appeler le dentiste à 15 heures",
            "quel temps fera-t-il demain",
            "réserve une table pour quatre vendredi soir",
            "traduis ce paragraphe en anglais",
        ],
    ),
    (
        "de",
        &[
            "kannst du mir die Rechnung vom Januar schicken",
            "wie lange dauert die Lieferung nach Wien",
            "erstelle eine Übersicht der offenen Aufgaben",
            "bitte sag den Termin am Donnerstag ab",
            "schick das Wochenupdate an das ganze Team",
            "kündige mein Abonnement",
            "warum ist mein Laptop so langsam",
            "setz Milch und Eier auf die Einkaufsliste",
            "ich muss mein Passwort zurücksetzen",
            "prüf mal, ob der Server noch läuft",
            "ich möchte die Schuhe von letzter Woche zurückgeben",
            "zeig mir die Umsätze vom letzten Monat nach Region",
            "erinnere mich daran, um drei den Zahnarzt anzurufen",
            "wie wird das Wetter morgen",
            "reservier einen Tisch für vier am Freitagabend",
            "übersetz diesen Absatz ins Englische",
        ],
    ),
    (
        "it",
        &[
            "puoi controllare lo stato della mia spedizione",
            "prepara una presentazione per il cliente",
            "quanto tempo ci vuole per arrivare in centro",
            "manda l'aggiornamento settimanale a tutto il team",
            "annulla il mio abbonamento",
            "perché il mio portatile è così lento",
            "aggiungi latte e uova alla lista della spesa",
            "devo reimpostare la mia password",
            "controlla se il server è ancora attivo",
            "vorrei restituire le scarpe che ho comprato la settimana scorsa",
            "mostrami le vendite del mese scorso per regione",
            "ricordami di chiamare il dentista alle tre",
            "che tempo farà domani",
            "prenota un tavolo per quattro venerdì sera",
        ],
    ),
    (
        "ja",
        &[
            "先週の売上をまとめてください",
            "明日の会議の資料を送って",
            "このメールに返信してください",
            "パスワードをリセットしたいです",
            "サーバーがまだ動いているか確認して",
            "サブスクリプションを解約してください",
        ],
    ),
    (
        "zh",
        &[
            "帮我查一下明天的航班",
            "把这份文件翻译成英文",
            "这个月的账单是多少",
            "我需要重置密码",
            "检查一下服务器是否还在运行",
            "取消我的订阅",
        ],
    ),
    (
        "ru",
        &[
            "проверь, пришёл ли платёж от клиента",
            "напиши короткое поздравление коллеге",
            "найди ближайшую аптеку",
            "мне нужно сбросить пароль",
            "отмени мою подписку",
            "покажи продажи за прошлый месяц по регионам",
        ],
    ),
];

/// Words that mark a language in short descriptions ("Retrieve the score of a game", "Envía
/// una factura al cliente"): articles, prepositions and conjunctions, none shared by two of
/// these languages.
const FUNCTION_WORDS: &[(&str, &[&str])] = &[
    (
        "en",
        &[
            "the", "of", "and", "to", "for", "with", "from", "by", "this", "or", "your", "is",
            "are", "at", "its",
        ],
    ),
    (
        "pt",
        &["os", "do", "dos", "um", "uma", "com", "não", "ao", "pelo", "pela", "seu", "sua", "são"],
    ),
    ("es", &["el", "los", "las", "y", "sus", "está", "según"]),
    ("fr", &["du", "une", "pour", "avec", "dans", "sur", "et", "est", "au", "aux", "ses"]),
    (
        "de",
        &[
            "der", "die", "den", "dem", "ein", "eine", "und", "für", "mit", "von", "zu", "auf",
            "ist", "oder", "nach",
        ],
    ),
    (
        "it",
        &[
            "gli", "della", "dei", "delle", "di", "per", "nel", "nella", "che", "alla", "sono",
            "degli",
        ],
    ),
];

/// The catalog's language among [`REQUESTS_BY_LANGUAGE`]'s, read from its tools' names and
/// descriptions: the language whose function words they hold most, when it holds at least
/// twice as many as the next and at least one per four tools; for Japanese, Chinese and
/// Russian, the script of most of their letters. `None` when no language is that clear (a
/// catalog of bare names, or of two languages), and then no task is shifted.
pub fn catalog_language<'a>(texts: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    let mut hits = vec![0usize; FUNCTION_WORDS.len()];
    let (mut letters, mut kana, mut han, mut cyrillic, mut texts_seen) = (0usize, 0, 0, 0, 0);
    for text in texts {
        texts_seen += 1;
        for c in text.chars().filter(|c| c.is_alphabetic()) {
            letters += 1;
            match c as u32 {
                0x3040..=0x30FF => kana += 1,
                0x4E00..=0x9FFF => han += 1,
                0x0400..=0x04FF => cyrillic += 1,
                _ => {}
            }
        }
        let lower = text.to_lowercase();
        for word in lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            for (i, (_, words)) in FUNCTION_WORDS.iter().enumerate() {
                if words.contains(&word) {
                    hits[i] += 1;
                }
            }
        }
    }
    if letters > 0 {
        if 2 * kana >= letters / 4 && kana + han > letters / 2 {
            return Some("ja");
        }
        if han > letters / 2 {
            return Some("zh");
        }
        if cyrillic > letters / 2 {
            return Some("ru");
        }
    }
    let mut order: Vec<usize> = (0..hits.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(hits[i]));
    let (best, next) = (hits[order[0]], hits[order[1]]);
    (best >= 2 * next && best > 0 && 4 * best >= texts_seen).then(|| FUNCTION_WORDS[order[0]].0)
}

/// The catalog's language, read from its tools' names and descriptions ([`catalog_language`]).
pub(crate) fn language_of(catalog: &Catalog) -> Option<&'static str> {
    catalog_language(catalog.tools.iter().flat_map(|t| [t.name.as_str(), t.description.as_str()]))
}

/// The section for `catalog`, or `None` for a model without a language shift (or an index
/// whose rows are in a query adapter's space, which the centroids are not).
pub(crate) fn section(
    embedder: &dyn Embedder,
    catalog: &Catalog,
    has_adapter: bool,
) -> crate::Result<Option<LanguageShiftMeta>> {
    let Some(settings) = embedder.info().language_shift.clone().filter(|_| !has_adapter) else {
        return Ok(None);
    };
    if let Some(unknown) =
        settings.unmoved.iter().find(|l| !REQUESTS_BY_LANGUAGE.iter().any(|(x, _)| x == l))
    {
        let known: Vec<&str> = REQUESTS_BY_LANGUAGE.iter().map(|(l, _)| *l).collect();
        return Err(crate::BuildError::ModelSetting {
            model: embedder.info().name.clone(),
            field: "language_shift.unmoved",
            message: format!(
                "{unknown:?} is not a language the builder has ordinary requests for; use codes \
                 among {}",
                known.join(", ")
            ),
        });
    }
    let dim = embedder.info().dim;
    let texts: Vec<String> = REQUESTS_BY_LANGUAGE
        .iter()
        .flat_map(|(_, requests)| requests.iter().map(|s| s.to_string()))
        .collect();
    let vectors: Vec<f32> =
        crate::embed_all(embedder, &texts, None)?.into_iter().flatten().collect();
    let mut centroids = Vec::with_capacity(REQUESTS_BY_LANGUAGE.len() * dim);
    let mut start = 0;
    for (_, requests) in REQUESTS_BY_LANGUAGE {
        let rows = &vectors[start * dim..(start + requests.len()) * dim];
        centroids.extend(crate::query_shift::centroid(rows, dim));
        start += requests.len();
    }
    let language = language_of(catalog);
    Ok(Some(LanguageShiftMeta {
        strength: settings.strength,
        full_margin: settings.full_margin,
        languages: REQUESTS_BY_LANGUAGE.iter().map(|(l, _)| l.to_string()).collect(),
        requests: REQUESTS_BY_LANGUAGE.iter().map(|(_, r)| r.len() as u32).collect(),
        centroids,
        catalog_language: language
            .and_then(|l| REQUESTS_BY_LANGUAGE.iter().position(|(x, _)| *x == l))
            .map(|i| i as u32),
        unmoved: settings.unmoved,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalogs_language_is_read_from_its_function_words_or_its_script() {
        let en = [
            "getBasketballScore",
            "Retrieve the score of a basketball game",
            "Send an invoice to the customer",
        ];
        assert_eq!(catalog_language(en), Some("en"));
        let es = [
            "crear_factura",
            "Crea una factura para el cliente",
            "Consulta el estado de los pedidos",
        ];
        assert_eq!(catalog_language(es), Some("es"));
        let de = [
            "Rechnung",
            "Erstellt eine Rechnung für den Kunden",
            "Zeigt die Bestellungen der Woche",
        ];
        assert_eq!(catalog_language(de), Some("de"));
        assert_eq!(catalog_language(["請求書を作成します", "注文の状態を確認します"]), Some("ja"));
        assert_eq!(catalog_language(["创建发票", "查询订单状态"]), Some("zh"));
        assert_eq!(catalog_language(["Создать счёт", "Проверить статус заказа"]), Some("ru"));
    }

    #[test]
    fn a_catalog_of_bare_names_or_of_two_languages_has_no_language() {
        assert_eq!(catalog_language(["read_file", "write_file", "git_push", "run_tests"]), None);
        let mixed = [
            "Send the invoice to the customer",
            "Envía la factura a los clientes y sus copias por correo",
        ];
        assert_eq!(catalog_language(mixed), None);
        assert_eq!(catalog_language([]), None);
    }

    #[test]
    fn every_language_has_requests_and_function_words_name_known_languages() {
        assert!(REQUESTS_BY_LANGUAGE.iter().all(|(_, r)| r.len() >= 6));
        for (l, _) in FUNCTION_WORDS {
            assert!(REQUESTS_BY_LANGUAGE.iter().any(|(x, _)| x == l), "{l}");
        }
    }
}
