//! Models loaded once per process and shared by every object that asks for the same one (a
//! `Router` and a `Memory` of the same index load it once).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use switchyard_embed::Embedder;

type Cache = Mutex<HashMap<String, Weak<dyn Embedder>>>;

fn cache() -> &'static Cache {
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// The model `name`, loaded now or shared with a live object that loaded it. The encoder
/// settings come from the `SWITCHYARD_*` variables, as for the `switchyard` command.
pub fn load(name: &str) -> Result<Arc<dyn Embedder>, String> {
    if let Ok(cache) = cache().lock()
        && let Some(model) = cache.get(name).and_then(Weak::upgrade)
    {
        return Ok(model);
    }
    let options = switchyard_embed::EmbedOptions::from_vars(|k| std::env::var(k).ok())
        .map_err(|e| e.to_string())?;
    // The binding's edge, like the command's: `$SWITCHYARD_MODELS` is searched first.
    let dirs: Vec<std::path::PathBuf> =
        std::env::var_os("SWITCHYARD_MODELS").map(Into::into).into_iter().collect();
    let model: Arc<dyn Embedder> = Arc::new(
        switchyard_embed::load_in(name, &dirs, &options)
            .map_err(|e| format!("loading model {name}: {e}"))?,
    );
    if let Ok(mut cache) = cache().lock() {
        cache.retain(|_, m| m.strong_count() > 0);
        cache.insert(name.to_string(), Arc::downgrade(&model));
    }
    Ok(model)
}
