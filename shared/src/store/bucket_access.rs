//! The bucket of an S3-mode store, for state kept beside a tenant's database and never in its
//! log (such as the request journal's batches: the sandbox powers, a layer above, store them
//! here; the store knows nothing of them). Keys are relative to the
//! configured prefix, under `tenants/<id>/`, so deleting a tenant erases them with it.

use super::{s3, Store};

impl Store {
    /// The bucket (S3 mode), `None` for a local store.
    pub fn bucket(&self) -> Option<s3::Bucket> {
        self.inner.bucket.as_ref().map(|(bucket, _)| bucket.clone())
    }
}
