//! Word lists of the task analysis. Entries are folded (lowercase, no diacritics); a trailing
//! `*` matches any word that starts with the rest. Kept one line per group of words (the
//! parent skips formatting this module), so the lists stay readable.

/// Verbs that name an action (imperatives and common forms, five languages).
pub const ACTIONS: &[&str] = &[
    // English
    "fix", "fixes", "fixed", "fixing", "repair*", "add", "adds", "adding", "remove*",
    "delete*", "drop", "rename*", "update*", "upgrade*", "bump", "change", "changes",
    "replace*", "refactor*", "rewrite*", "migrate*", "move", "create*", "make", "build*",
    "write", "implement*", "deploy*", "redeploy*", "release", "restart*", "reboot*", "start",
    "stop", "kill", "run", "rerun", "execute", "test", "debug", "investigate*", "find",
    "search*", "look", "show", "list", "get", "fetch", "check", "verify", "review*",
    "explain*", "describe*", "summari*", "document", "optimi*", "speed", "scale", "split",
    "merge", "revert*", "rollback", "roll", "backup", "restore*", "install*", "configure*",
    "set", "enable*", "disable*", "clean*", "format", "lint", "upload*", "download*", "send",
    "cancel*", "refund*", "book", "schedule*", "track", "export*", "import*", "convert*",
    "translate*", "compare*", "analy*", "count", "compute*", "calculate*", "estimate*", "plan",
    "design", "redesign*", "profile", "benchmark*", "validate*", "generate*", "open", "close",
    "archive*", "assign*", "notify", "sort", "clear", "reset", "purge*", "prune*", "publish*",
    "bounce", "rotate*", "patch", "copy", "insert*", "extract*", "parse", "point", "scrub*",
    "retry", "audit*", "monitor*", "diagnose*", "troubleshoot*", "reproduce*", "increase*",
    "decrease*", "grant", "revoke*", "approve*", "reject*", "integrate*", "separate*", "undo",
    "commit", "push", "pull", "rebase*", "overhaul*", "unify", "restructure*", "reorganize*",
    "tidy", "shut", "turn", "rewire", "wire", "port", "give", "put",
    // Portuguese
    "arrum*", "consert*", "corrig*", "adicion*", "remov*", "apag*", "delet*", "renome*",
    "atualiz*", "mud*", "troc*", "substitu*", "refator*", "reescrev*", "migr*", "cria",
    "criar", "constru*", "escrev*", "implement*", "publiq*", "reinici*", "inici*", "execut*",
    "roda", "rodar", "testa", "testar", "documenta", "documentar", "depur*", "investig*",
    "encontr*", "procur*", "busc*", "mostr*", "lista", "listar", "liste", "verific*", "revis*",
    "explic*", "descrev*", "resum*", "otimiz*", "divid*", "separ*", "junt*", "revert*",
    "restaur*", "instal*", "configur*", "ativa", "ativar", "desativ*", "limp*", "envia",
    "enviar", "envie", "cancel*", "reembols*", "export*", "import*", "convert*", "traduz*",
    "compar*", "analis*", "calcul*", "planej*", "desenh*", "valida", "validar", "valide",
    "gera", "gerar", "abre", "abrir", "fech*", "reorganiz*", "ajust*", "deslig*", "olh*",
    "vistazo", "oeil", "blick", "resolv*", "checa*", "reestrutur*", "desliga", "garant*",
    // Spanish
    "arregl*", "repar*", "anad*", "agreg*", "elimin*", "borr*", "quit*", "renombr*",
    "actualiz*", "cambi*", "reemplaz*", "sustitu*", "refactori*", "reescrib*", "rehaz*",
    "muev*", "move", "mova", "mover", "movi", "crea", "crear", "escrib*", "despleg*", "deten*",
    "ejecut*", "prueba", "probar", "averigu*", "muestr*", "comprob*", "describ*", "optimiz*",
    "fusion*", "activa", "activar", "desactiv*", "limpi*", "traduc*", "analiz*", "planific*",
    "disen*", "genera", "generar", "cierr*", "retir*", "mira", "mirar", "revisa", "define",
    "reinicia*", "reestructur*",
    // French
    "repare*", "repar*", "ajout*", "supprim*", "enlev*", "renomm*", "mets", "mettre", "met",
    "remplac*", "reecri*", "deplac*", "cree", "creer", "ecri*", "deploi*", "redemarr*",
    "demarr*", "arret*", "lance*", "debogu*", "enquet*", "trouv*", "cherch*", "montr*",
    "affich*", "verifi*", "revoi*", "relis*", "expliqu*", "decri*", "optimis*", "decoup*",
    "fusionn*", "annul*", "nettoi*", "nettoy*", "envoi*", "envoy*", "rembours*", "tradui*",
    "analys*", "planifi*", "concev*", "ouvr*", "ferm*", "regard*", "migre*", "reorganis*",
    "adapte*", "verifie*", "remplace*",
    // German
    "reparier*", "beheb*", "korrigier*", "fuge", "fug", "hinzu*", "entfern*", "losch*",
    "benenn*", "umbenenn*", "aktualisier*", "ersetz*", "refaktorier*", "umschreib*",
    "uberarbeit*", "migrier*", "verschieb*", "erstell*", "bau", "baue", "schreib*",
    "implementier*", "deploye*", "starte*", "stopp*", "fuhr*", "teste*", "untersuch*",
    "finde*", "suche", "such", "zeig*", "pruf*", "uberpruf*", "erklar*", "beschreib*", "fass*",
    "dokumentier*", "optimier*", "zerleg*", "trenn*", "teile", "wiederherstell*",
    "installier*", "konfigurier*", "aktivier*", "deaktivier*", "schick*", "sende*", "storn*",
    "erstatt*", "exportier*", "importier*", "konvertier*", "ubersetz*", "vergleich*",
    "analysier*", "zahle*", "berechn*", "plane*", "entwirf*", "entwerf*", "validier*",
    "generier*", "offn*", "schliess*", "schau*", "stell*", "richte*", "schalt*",
    "vereinheitlich*", "weg", "umstell*", "aufraum*", "bring*",
];

/// Action words that are as often nouns ("the login test", "der Build"): they count as
/// the action only at the start of the request or right after a word that opens a clause.
pub const AMBIGUOUS: &[&str] = &[
    "test", "build", "release", "profile", "format", "design", "plan", "change", "book",
    "track", "backup", "patch", "commit", "push", "review", "update", "export", "import",
    "list", "count", "merge", "split", "point", "turn", "set", "start", "stop", "run", "copy",
    "document", "check", "look", "bump", "drop", "clear", "sort", "open", "close", "lista",
    "teste", "liste", "plane", "suche", "weg", "bau", "mira", "crea", "define",
];

/// Words after which an ambiguous word is a verb ("and delete", "then run").
pub const CLAUSE_OPENERS: &[&str] = &[
    "and", "then", "to", "please", "also", "e", "y", "et", "und", "dann", "puis", "luego",
    "depois", "danach", "ensuite", "pls", "just", "bitte",
];

/// Determiners and "of" words: an action word right after one is a noun or a modifier
/// ("the build", "de enviar", "de debug").
pub const BEFORE_NOUNS: &[&str] = &[
    "the", "a", "an", "of", "de", "do", "da", "dos", "das", "o", "os", "um", "uma", "el",
    "los", "las", "un", "una", "del", "le", "la", "les", "une", "du", "des", "der", "die",
    "das", "den", "dem", "des", "ein", "eine", "einen", "von", "vom", "my", "our", "your",
    "this", "that", "its",
];

/// Nouns that carry the action of a light verb ("take a look", "dá uma olhada").
pub const LIGHT_VERB_NOUNS: &[&str] = &["olhada", "vistazo", "oeil", "blick", "weg"];

/// Verbs that stand in for an action without naming one ("do", "take care of", "cuida").
pub const PLACEHOLDERS: &[&str] = &[
    "do", "does", "doing", "done", "handle*", "deal", "dealing", "care", "take", "help*",
    "work", "working", "something", "faz", "fazer", "faca", "facam", "cuida*", "cuide*",
    "ajuda*", "ajude*", "mexe", "trata", "haz", "hazlo", "hacer", "hacerlo", "ocupa*",
    "ocupe*", "encarga*", "encargu*", "ayuda*", "maneja*", "gestiona*", "fais", "faire",
    "occupe*", "gere", "gerer", "aide*", "traite", "mach", "mache", "machen", "erledig*",
    "kummer*", "hilf", "hilfe", "tu", "tue", "tun",
];

/// Words that open a question (shared with the mode step's question rule).
pub use switchyard_lexical::question::QUESTION_STARTS;

/// "Why" and its kin: a question that asks for an investigation.
pub const WHY: &[&str] = &["why", "porque", "pourquoi", "warum", "wieso", "weshalb", "wrong"];

/// Polite or request words before the actual request ("can you", "bitte", "por favor").
pub use switchyard_lexical::question::REQUEST_FRAME as REQUEST;

/// Function words of the five languages.
pub const STOP: &[&str] = &[
    // English
    "the", "a", "an", "to", "of", "in", "on", "at", "for", "with", "from", "by", "into",
    "onto", "about", "as", "and", "or", "but", "so", "if", "then", "than", "that", "this",
    "these", "those", "it", "its", "is", "are", "was", "were", "be", "been", "being", "have",
    "has", "had", "i", "me", "my", "we", "us", "our", "you", "your", "he", "she", "they",
    "them", "their", "there", "here", "what", "which", "who", "whom", "whose", "why", "how",
    "when", "where", "not", "no", "yes", "any", "some", "just", "already", "again", "also",
    "now", "still", "very", "too", "please", "can", "could", "would", "will", "should", "may",
    "might", "must", "up", "out", "off", "over", "under", "down", "away", "back", "around",
    "after", "before", "while", "much", "many", "more", "most", "less", "few", "s", "t", "d",
    "ll", "re", "ve", "m", "sure", "right", "go", "went", "going", "anymore", "else",
    "nothing", "way", "time", "next", "last", "first", "via", "talk*", "discuss*", "mention*",
    "said", "say", "like", "one", "ones", "did", "does",
    // Portuguese
    "o", "os", "as", "um", "uma", "uns", "umas", "de", "do", "da", "dos", "das", "em", "no",
    "na", "nos", "nas", "num", "numa", "ao", "aos", "para", "pra", "pro", "pelo", "pela",
    "com", "sem", "e", "ou", "mas", "que", "se", "isso", "isto", "aquilo", "esse", "essa",
    "este", "esta", "aquele", "aquela", "ele", "ela", "eles", "elas", "eu", "mim", "meu",
    "minha", "nosso", "nossa", "voce", "te", "lhe", "ja", "ainda", "tambem", "agora", "mais",
    "muito", "pouco", "foi", "sao", "e", "estao", "ser", "ter", "tem", "ha", "entre", "ate",
    "sobre", "nisso", "nisto", "naquilo", "dele", "dela", "disso", "uma", "vez", "falamos",
    "combinamos", "continuam", "continua",
    // Spanish
    "el", "la", "los", "las", "un", "unos", "unas", "del", "al", "en", "con", "sin", "por",
    "y", "pero", "lo", "le", "les", "mi", "mis", "tu", "su", "sus", "esto", "eso", "aquello",
    "ese", "aquel", "yo", "ellos", "nosotros", "ya", "todavia", "ahora", "mas", "muy", "es",
    "son", "estan", "estar", "hay", "hasta", "siguen", "sigue", "hablamos", "dijimos", "donde",
    "haga", "falta", "para",
    // French
    "les", "l", "une", "des", "du", "au", "aux", "dans", "sur", "pour", "par", "avec", "sans",
    "et", "mais", "qu", "ce", "ca", "cela", "ceci", "cet", "cette", "ces", "il", "elle", "ils",
    "elles", "je", "j", "moi", "toi", "vous", "nous", "on", "mon", "ma", "mes", "ton", "ta",
    "tes", "son", "sa", "ses", "notre", "votre", "leur", "y", "ne", "pas", "plus", "deja",
    "aussi", "encore", "maintenant", "tres", "sont", "etre", "avoir", "ont", "jusqu", "n", "c",
    "marche", "arrivent", "une", "parle", "dit", "devant", "derriere",
    // German
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer",
    "eines", "und", "oder", "aber", "dass", "zu", "zum", "zur", "im", "am", "an", "auf", "aus",
    "bei", "mit", "nach", "von", "vom", "fur", "uber", "unter", "vor", "hinter", "durch",
    "ohne", "um", "es", "er", "sie", "ich", "mich", "mir", "du", "dich", "dir", "wir", "uns",
    "ihr", "euch", "sein", "seine", "ist", "sind", "war", "wird", "werden", "hat", "haben",
    "nicht", "kein", "keine", "schon", "noch", "auch", "jetzt", "sehr", "mal", "bitte", "doch",
    "ja", "nur", "drum", "darum", "damit", "dabei", "dazu", "davon", "dies", "diese", "dieser",
    "dieses", "was", "heraus", "dran", "besprochen", "gesagt", "geredet", "ab", "ein", "neu",
    "eingegangen", "mehr", "nichts", "dazwischen", "danach", "dann",
];

/// Nouns too generic to name a target on their own.
pub const VAGUE: &[&str] = &[
    "thing", "things", "stuff", "something", "everything", "anything", "problem", "problems",
    "issue", "issues", "bug", "bugs", "error", "errors", "file", "files", "code", "part",
    "task", "change", "changes", "item", "items", "coisa", "coisas", "problema", "problemas",
    "erro", "erros", "arquivo", "arquivos", "codigo", "tarefa", "cosa", "cosas", "error",
    "errores", "fallo", "archivo", "archivos", "tarea", "chose", "choses", "truc", "trucs",
    "probleme", "problemes", "erreur", "erreurs", "bogue", "fichier", "fichiers", "tache",
    "ding", "dinge", "sache", "sachen", "zeug", "fehler", "datei", "dateien", "aufgabe",
    "aquilo", "algo",
];

/// Prepositions that can open a place phrase ("in the auth service", "na listagem").
pub const PLACE_PREPOSITIONS: &[&str] = &[
    "in", "on", "at", "inside", "within", "across", "to", "into", "onto", "from", "under",
    "throughout", "for", "em", "no", "na", "nos", "nas", "num", "numa", "dentro", "para",
    "pra", "ao", "aos", "en", "dentro", "al", "hacia", "dans", "sur", "au", "aux", "pour",
    "chez", "im", "auf", "bei", "innerhalb", "fur", "zum", "zur", "ins", "am", "an", "aus",
    "from", "desde", "depuis", "seit",
];

/// Words that bound the extent or the time span by themselves.
pub const EXTENT: &[&str] = &[
    "all", "every", "each", "entire", "whole", "only", "everywhere", "today", "yesterday",
    "tonight", "tomorrow", "week", "month", "quarter", "year", "monday", "tuesday",
    "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march",
    "april", "june", "july", "august", "september", "october", "november", "december", "since",
    "until", "todo", "toda", "todos", "todas", "inteiro", "inteira", "cada", "apenas", "hoje",
    "ontem", "amanha", "semana", "trimestre", "ano", "janeiro", "fevereiro", "marco", "abril",
    "maio", "junho", "julho", "agosto", "setembro", "outubro", "novembro", "dezembro",
    "segunda", "terca", "quarta", "quinta", "sexta", "sabado", "domingo", "ultimo", "ultima",
    "passada", "passado", "entero", "entera", "solo", "hoy", "ayer", "manana", "lunes",
    "martes", "miercoles", "jueves", "viernes", "enero", "febrero", "marzo", "mayo", "junio",
    "julio", "septiembre", "octubre", "noviembre", "diciembre", "pasada", "pasado", "tout",
    "toute", "tous", "toutes", "entier", "entiere", "chaque", "seulement", "aujourd", "hui",
    "hier", "demain", "semaine", "mois", "annee", "lundi", "mardi", "mercredi", "jeudi",
    "vendredi", "samedi", "dimanche", "janvier", "fevrier", "mars", "avril", "mai", "juin",
    "juillet", "aout", "septembre", "octobre", "novembre", "decembre", "derniere", "dernier",
    "ensemble", "alle", "alles", "allen", "ganze", "ganzen", "gesamte", "gesamten",
    "komplette", "kompletten", "jede", "jeden", "jeder", "jedes", "heute", "gestern", "morgen",
    "woche", "monat", "quartal", "jahr", "montag", "dienstag", "mittwoch", "donnerstag",
    "freitag", "samstag", "sonntag", "januar", "februar", "marz", "juni", "juli", "oktober",
    "dezember", "letzte", "letzten", "samtliche",
];

/// Words of broad or structural work.
pub const BROAD: &[&str] = &[
    "all", "every", "entire", "whole", "across", "throughout", "everything", "refactor*",
    "migrat*", "rewrite*", "redesign*", "overhaul*", "architect*", "restructur*", "reorganiz*",
    "monolith*", "distributed", "integrat*", "todo", "toda", "todos", "todas", "inteiro",
    "inteira", "refator*", "migr*", "reescrev*", "arquitet*", "reestrutur*", "monolit*",
    "distribu*", "entero", "entera", "refactori*", "reescrib*", "rehaz*", "arquitect*",
    "reestructur*", "tout", "toute", "tous", "toutes", "entier", "entiere", "ensemble",
    "reecri*", "decoup*", "reorganis*", "alle", "alles", "allen", "ganze", "ganzen", "gesamte",
    "gesamten", "komplette", "kompletten", "samtliche", "umschreib*", "uberarbeit*",
    "refaktorier*", "migrier*", "zerleg*", "umstell*", "stelle", "micro*", "mikro*",
];

/// Main verbs that ask for a substantial piece of work.
pub const SUBSTANTIAL: &[&str] = &[
    "add", "implement*", "write", "create*", "build*", "investigate*", "debug", "explain*",
    "review*", "optimi*", "design", "adicion*", "escrev*", "cria", "criar", "constru*",
    "investig*", "depur*", "explic*", "revis*", "otimiz*", "anad*", "agreg*", "escrib*",
    "crea", "crear", "averigu*", "optimiz*", "ajout*", "ecri*", "cree", "creer", "enquet*",
    "debogu*", "expliqu*", "optimis*", "fuge", "fug", "hinzu*", "implementier*", "schreib*",
    "erstell*", "bau", "baue", "untersuch*", "erklar*", "optimier*", "trouve", "finde*",
    "setup", "integrate*",
];

/// Words that chain steps.
pub const STEPS: &[&str] = &[
    "then", "afterwards", "finally", "first", "also", "depois", "seguida", "fim", "primeiro",
    "tambem", "luego", "despues", "primero", "finalmente", "tambien", "puis", "ensuite",
    "enfin", "abord", "aussi", "apres", "dann", "danach", "anschliessend", "zuerst",
    "schliesslich", "ausserdem",
];

/// Whether `word` is in `list` (exactly, or by a `*` prefix entry).
pub fn contains(list: &[&str], word: &str) -> bool {
    list.iter().any(|e| match e.strip_suffix('*') {
        Some(prefix) => word.starts_with(prefix),
        None => *e == word,
    })
}
