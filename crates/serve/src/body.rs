//! The JSON body extractor: every way a body can be wrong is a 400 (413 when too large) whose
//! message names the field, never axum's plain-text rejections.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

/// A request body parsed as JSON into `T` (whose unknown fields are refused).
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            let status = rejection.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError {
                    status,
                    message: "request body is over the server's limit; send less, or start \
                              the server with a larger --max-body"
                        .into(),
                }
            } else {
                ApiError { status, message: format!("reading the request body: {rejection}") }
            }
        })?;
        parse(&bytes).map(JsonBody)
    }
}

/// Parses a body; the message says where and what (serde names the unknown or missing field).
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty; send a JSON object"));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        // serde_json reports some wrong types (an object or an array where a word like
        // `"minimal"` is expected) as syntax errors; a body that parses as JSON is not malformed.
        let well_formed = serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
        let what = match e.classify() {
            serde_json::error::Category::Data => "invalid request",
            _ if well_formed => "invalid request",
            _ => "malformed JSON",
        };
        ApiError::bad_request(format!("{what}: {e}"))
    })
}
