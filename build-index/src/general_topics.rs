//! The general topics of the off-topic check in the languages a catalog is most often written
//! in besides English (see the `off_topic` module).
//!
//! Why: multilingual-e5 scores a task nearer to texts in its own language. On a catalog in
//! German, a German task about jokes met German tool cards and English topic cards, so the
//! catalog won on language alone and the task got tools. A catalog whose language has a list
//! here also gets the topics in that language, so a task in the catalog's language meets both
//! on the same footing, as an English task does on an English catalog.
//!
//! Each list translates [`crate::GENERAL_TOPICS`] line by line (same order, a name, a colon and
//! a one-line description), written for switchyard (session 56) before any result on them.

/// The general topics per language (codes as in [`crate::REQUESTS_BY_LANGUAGE`]), in the order
/// of [`crate::GENERAL_TOPICS`].
pub const GENERAL_TOPICS_TRANSLATED: &[(&str, &[&str])] = &[
    (
        "de",
        &[
            "Allgemeinwissen: Quizfragen zu Geschichte, Geografie, Wissenschaft und berühmten Menschen beantworten.",
            "Witze: Einen Witz oder eine lustige Geschichte erzählen.",
            "Gedichte und Lieder: Ein Gedicht, einen Liedtext oder eine kurze Geschichte schreiben.",
            "Rezepte: Vorschlagen, was man kochen kann, und ein Rezept Schritt für Schritt erklären.",
            "Gesundheit und Wohlbefinden: Allgemeine Tipps zu Ernährung, Schlaf, Bewegung und Wohlfühlen.",
            "Beziehungen: Rat zu Freunden, Familie, Partnersuche und Trennungen.",
            "Wortbedeutungen: Erklären, was ein Wort oder eine Redewendung bedeutet und woher sie kommt.",
            "Übersetzung: Einen Satz oder eine Wendung in eine andere Sprache übersetzen.",
            "Hausaufgabenhilfe: Ein Schulfach erklären oder eine Matheaufgabe lösen.",
            "Wissenschaft erklärt: Erklären, wie die Natur funktioniert: Tiere, Pflanzen, Weltraum, Wetter und der menschliche Körper.",
            "Empfehlungen: Bücher, Filme, Serien, Musik oder Spiele empfehlen.",
            "Sport: Ergebnisse, Spieler und Regeln von Fußball, Tennis und anderen Sportarten.",
            "Promis und Popkultur: Neuigkeiten und Klatsch über Schauspieler, Sänger und Influencer.",
            "Philosophie: Über den Sinn des Lebens, Ethik und große Fragen sprechen.",
            "Träume und Horoskope: Träume deuten, Sternzeichen und Horoskope.",
            "Haustiere: Hunde, Katzen und andere Haustiere pflegen; einen Namen für ein Haustier finden.",
            "Geschenke und Feste: Ideen für Geschenke, Geburtstage, Hochzeiten, Reden und Trinksprüche.",
            "Reiseideen: Urlaubsziele, Sehenswürdigkeiten und was man einpacken sollte.",
            "Gärtnern: Pflanzen, Blumen und Gemüse zu Hause anbauen.",
            "Sprachen lernen: Grammatik, Wortschatz und Tipps zum Lernen einer Fremdsprache.",
            "Smalltalk: Plaudern, Grüßen und wie geht's.",
            "Persönliches Schreiben: Hilfe bei einem persönlichen Brief, einer Geburtstagskarte oder einem Beitrag in sozialen Medien.",
            "Geschichte: Ereignisse, Kriege, Könige und Reiche der Vergangenheit.",
            "Geografie: Länder, Hauptstädte, Berge, Flüsse und Einwohnerzahlen.",
            "Fitness: Trainingseinheiten, Laufpläne und Dehnübungen.",
            "Fun Facts: Interessante und überraschende Fakten über alles Mögliche.",
            "Rätsel und Spiele: Rätsel, Denksportaufgaben, Quizze und Wortspiele.",
            "Lebensrat: Motivation, Gewohnheiten, Stress, Berufswahl und Entscheidungen.",
            "Auto und Zuhause: Alltagstipps fürs Auto, zum Putzen und für Reparaturen im Haushalt.",
            "Religion und Mythologie: Götter, Mythen, Legenden und Glaubensvorstellungen.",
        ],
    ),
    (
        "fr",
        &[
            "culture générale : Répondre à des questions de quiz sur l'histoire, la géographie, les sciences et les personnes célèbres.",
            "blagues : Raconter une blague ou une histoire drôle.",
            "poèmes et chansons : Écrire un poème, des paroles de chanson ou une courte histoire.",
            "recettes : Proposer quoi cuisiner et expliquer une recette étape par étape.",
            "santé et bien-être : Conseils généraux sur l'alimentation, le sommeil, le sport et se sentir mieux.",
            "relations : Conseils sur les amis, la famille, les rencontres et les ruptures.",
            "sens des mots : Expliquer ce que veut dire un mot ou une expression et d'où il vient.",
            "traduction : Traduire une phrase ou une expression dans une autre langue.",
            "aide aux devoirs : Expliquer une matière scolaire ou résoudre un exercice de maths.",
            "la science expliquée : Expliquer comment fonctionne la nature : les animaux, les plantes, l'espace, la météo et le corps humain.",
            "recommandations : Conseiller des livres, des films, des séries, de la musique ou des jeux.",
            "sport : Résultats, joueurs et règles du football, du tennis et d'autres sports.",
            "célébrités et culture populaire : Actualités et potins sur les acteurs, les chanteurs et les influenceurs.",
            "philosophie : Parler du sens de la vie, de morale et des grandes questions.",
            "rêves et horoscopes : Interpréter les rêves, les signes du zodiaque et les horoscopes.",
            "animaux de compagnie : S'occuper des chiens, des chats et d'autres animaux ; trouver un nom pour un animal.",
            "cadeaux et fêtes : Idées de cadeaux, anniversaires, mariages, discours et toasts.",
            "idées de voyage : Destinations de vacances, choses à voir et quoi mettre dans sa valise.",
            "jardinage : Faire pousser des plantes, des fleurs et des légumes chez soi.",
            "apprendre une langue : Grammaire, vocabulaire et astuces pour apprendre une langue étrangère.",
            "bavardage : Discuter, se saluer et demander comment ça va.",
            "écriture personnelle : Aider à écrire une lettre personnelle, une carte d'anniversaire ou une publication sur les réseaux sociaux.",
            "histoire : Événements, guerres, rois et empires du passé.",
            "géographie : Pays, capitales, montagnes, fleuves et populations.",
            "forme physique : Séances d'entraînement, programmes de course et étirements.",
            "anecdotes : Des faits intéressants et surprenants sur tout et n'importe quoi.",
            "devinettes et jeux : Devinettes, casse-têtes, quiz et jeux de mots.",
            "conseils de vie : Motivation, habitudes, stress, choix de carrière et décisions.",
            "voiture et maison : Astuces de tous les jours pour la voiture, le ménage et les réparations à la maison.",
            "religion et mythologie : Dieux, mythes, légendes et croyances.",
        ],
    ),
    (
        "es",
        &[
            "cultura general: Responder preguntas de trivia sobre historia, geografía, ciencia y personajes famosos.",
            "chistes: Contar un chiste o una historia graciosa.",
            "poemas y canciones: Escribir un poema, la letra de una canción o un relato corto.",
            "recetas: Sugerir qué cocinar y explicar una receta paso a paso.",
            "salud y bienestar: Consejos generales sobre alimentación, sueño, ejercicio y sentirse mejor.",
            "relaciones: Consejos sobre amigos, familia, citas y rupturas.",
            "significado de las palabras: Explicar qué significa una palabra o una expresión y de dónde viene.",
            "traducción: Traducir una frase o una expresión a otro idioma.",
            "ayuda con los deberes: Explicar una asignatura o resolver un ejercicio de matemáticas.",
            "ciencia explicada: Explicar cómo funciona la naturaleza: los animales, las plantas, el espacio, el tiempo y el cuerpo humano.",
            "recomendaciones: Recomendar libros, películas, series, música o juegos.",
            "deportes: Resultados, jugadores y reglas del fútbol, el tenis y otros deportes.",
            "famosos y cultura pop: Noticias y cotilleos sobre actores, cantantes e influencers.",
            "filosofía: Hablar del sentido de la vida, la ética y las grandes preguntas.",
            "sueños y horóscopos: Interpretar sueños, signos del zodiaco y horóscopos.",
            "mascotas: Cuidar perros, gatos y otras mascotas; elegir un nombre para una mascota.",
            "regalos y fiestas: Ideas para regalos, cumpleaños, bodas, discursos y brindis.",
            "ideas de viaje: Destinos de vacaciones, lugares que ver y qué llevar en la maleta.",
            "jardinería: Cómo cultivar plantas, flores y verduras en casa.",
            "aprender idiomas: Gramática, vocabulario y consejos para aprender un idioma extranjero.",
            "charla: Conversar, saludar y preguntar qué tal.",
            "escritura personal: Ayudar a escribir una carta personal, una tarjeta de cumpleaños o una publicación en redes sociales.",
            "historia: Acontecimientos, guerras, reyes e imperios del pasado.",
            "geografía: Países, capitales, montañas, ríos y poblaciones.",
            "forma física: Entrenamientos, planes para correr y estiramientos.",
            "curiosidades: Datos interesantes y sorprendentes sobre cualquier cosa.",
            "acertijos y juegos: Acertijos, rompecabezas, concursos y juegos de palabras.",
            "consejos para la vida: Motivación, hábitos, estrés, elección de carrera y decisiones.",
            "coche y hogar: Consejos del día a día para el coche, la limpieza y las reparaciones en casa.",
            "religión y mitología: Dioses, mitos, leyendas y creencias.",
        ],
    ),
    (
        "pt",
        &[
            "cultura geral: Responder a perguntas de quiz sobre história, geografia, ciência e pessoas famosas.",
            "piadas: Contar uma piada ou uma história engraçada.",
            "poemas e canções: Escrever um poema, a letra de uma canção ou um conto.",
            "receitas: Sugerir o que cozinhar e explicar uma receita passo a passo.",
            "saúde e bem-estar: Conselhos gerais sobre alimentação, sono, exercício e sentir-se melhor.",
            "relacionamentos: Conselhos sobre amigos, família, namoro e separações.",
            "significado das palavras: Explicar o que quer dizer uma palavra ou uma expressão e de onde vem.",
            "tradução: Traduzir uma frase ou uma expressão para outra língua.",
            "ajuda com os trabalhos de casa: Explicar uma disciplina da escola ou resolver um exercício de matemática.",
            "ciência explicada: Explicar como funciona a natureza: os animais, as plantas, o espaço, o tempo e o corpo humano.",
            "recomendações: Recomendar livros, filmes, séries, música ou jogos.",
            "desporto: Resultados, jogadores e regras do futebol, do ténis e de outros desportos.",
            "famosos e cultura pop: Notícias e mexericos sobre atores, cantores e influenciadores.",
            "filosofia: Falar sobre o sentido da vida, a ética e as grandes questões.",
            "sonhos e horóscopos: Interpretar sonhos, signos do zodíaco e horóscopos.",
            "animais de estimação: Cuidar de cães, gatos e outros animais; escolher um nome para um animal.",
            "presentes e festas: Ideias de presentes, aniversários, casamentos, discursos e brindes.",
            "ideias de viagem: Destinos de férias, o que visitar e o que levar na mala.",
            "jardinagem: Como cultivar plantas, flores e legumes em casa.",
            "aprender línguas: Gramática, vocabulário e dicas para aprender uma língua estrangeira.",
            "conversa: Conversar, cumprimentar e perguntar como estás.",
            "escrita pessoal: Ajudar a escrever uma carta pessoal, um cartão de aniversário ou uma publicação nas redes sociais.",
            "história: Acontecimentos, guerras, reis e impérios do passado.",
            "geografia: Países, capitais, montanhas, rios e populações.",
            "condição física: Treinos, planos de corrida e alongamentos.",
            "curiosidades: Factos interessantes e surpreendentes sobre qualquer coisa.",
            "adivinhas e jogos: Adivinhas, quebra-cabeças, quizzes e jogos de palavras.",
            "conselhos de vida: Motivação, hábitos, stress, escolhas de carreira e decisões.",
            "carro e casa: Dicas do dia a dia para o carro, as limpezas e as reparações em casa.",
            "religião e mitologia: Deuses, mitos, lendas e crenças.",
        ],
    ),
    (
        "it",
        &[
            "cultura generale: Rispondere a domande di quiz su storia, geografia, scienza e personaggi famosi.",
            "barzellette: Raccontare una barzelletta o una storia divertente.",
            "poesie e canzoni: Scrivere una poesia, il testo di una canzone o un racconto breve.",
            "ricette: Suggerire cosa cucinare e spiegare una ricetta passo dopo passo.",
            "salute e benessere: Consigli generali su alimentazione, sonno, attività fisica e sentirsi meglio.",
            "relazioni: Consigli su amici, famiglia, appuntamenti e rotture.",
            "significato delle parole: Spiegare cosa vuol dire una parola o un'espressione e da dove viene.",
            "traduzione: Tradurre una frase o un'espressione in un'altra lingua.",
            "aiuto con i compiti: Spiegare una materia scolastica o risolvere un esercizio di matematica.",
            "la scienza spiegata: Spiegare come funziona la natura: gli animali, le piante, lo spazio, il tempo e il corpo umano.",
            "consigli di lettura e visione: Consigliare libri, film, serie, musica o giochi.",
            "sport: Risultati, giocatori e regole del calcio, del tennis e di altri sport.",
            "celebrità e cultura pop: Notizie e pettegolezzi su attori, cantanti e influencer.",
            "filosofia: Parlare del senso della vita, dell'etica e delle grandi domande.",
            "sogni e oroscopi: Interpretare i sogni, i segni zodiacali e gli oroscopi.",
            "animali domestici: Prendersi cura di cani, gatti e altri animali; scegliere un nome per un animale.",
            "regali e feste: Idee per regali, compleanni, matrimoni, discorsi e brindisi.",
            "idee di viaggio: Mete per le vacanze, cose da vedere e cosa mettere in valigia.",
            "giardinaggio: Come coltivare piante, fiori e ortaggi a casa.",
            "imparare le lingue: Grammatica, vocabolario e consigli per imparare una lingua straniera.",
            "chiacchiere: Fare due chiacchiere, salutare e chiedere come va.",
            "scrittura personale: Aiutare a scrivere una lettera personale, un biglietto di compleanno o un post sui social.",
            "storia: Eventi, guerre, re e imperi del passato.",
            "geografia: Paesi, capitali, montagne, fiumi e popolazioni.",
            "allenamento: Esercizi, programmi di corsa e stretching.",
            "curiosità: Fatti interessanti e sorprendenti su qualsiasi cosa.",
            "indovinelli e giochi: Indovinelli, rompicapi, quiz e giochi di parole.",
            "consigli di vita: Motivazione, abitudini, stress, scelte di carriera e decisioni.",
            "auto e casa: Consigli quotidiani per l'auto, le pulizie e le riparazioni in casa.",
            "religione e mitologia: Dei, miti, leggende e credenze.",
        ],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_translates_every_topic_in_order_as_a_card() {
        for (language, topics) in GENERAL_TOPICS_TRANSLATED {
            assert_eq!(topics.len(), crate::GENERAL_TOPICS.len(), "{language}");
            for card in *topics {
                let (name, description) = card.split_once(':').expect(card);
                assert!(!name.trim().is_empty() && description.ends_with('.'), "{card}");
            }
            assert!(
                crate::REQUESTS_BY_LANGUAGE.iter().any(|(l, _)| l == language),
                "{language}: the builder must be able to read a catalog as this language"
            );
        }
    }
}
