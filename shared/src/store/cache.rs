//! This process's private cache directory in S3 mode: `<data_dir>/s3-cache/<id>/`, where
//! `<id>` is random (a UUID), never the PID: processes in different containers sharing one
//! volume all run as PID 1, and keying by PID made them delete and reopen each other's files.
//!
//! Ownership is an advisory lock (`flock`, through `File::try_lock`) on
//! `<data_dir>/s3-cache/<id>.lock`, held for the life of the process; the kernel releases it
//! when the process dies, however it dies. Invariants:
//! - The lock file is created and locked before the directory exists, so a directory whose
//!   lock file is missing belongs to nobody alive.
//! - At start, every `<id>.lock` that can be locked belongs to a dead process: its directory
//!   and then the lock file are removed. A lock held by another live process is left alone,
//!   with its directory.
//! - Directories named by digits only (the PID-keyed caches of older builds) are left alone:
//!   nothing tells whether their process still runs.
//!
//! `flock` works across processes and containers on one host (bind mounts, Docker volumes);
//! on NFS it depends on the server's lock support.

use crate::Result;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A claimed cache directory; released (and removed) on drop.
pub(crate) struct CacheDir {
    path: PathBuf,
    lock_path: PathBuf,
    /// Holds the lock for as long as the directory is in use.
    _lock: File,
}

impl CacheDir {
    /// Cleans the caches of dead processes under `root`, then claims a new directory there.
    pub fn claim(root: &Path) -> Result<CacheDir> {
        std::fs::create_dir_all(root)?;
        clean_stale(root);
        let id = uuid::Uuid::new_v4().simple().to_string();
        let lock_path = root.join(format!("{id}.lock"));
        let mut lock = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock_path)?;
        lock.try_lock().map_err(|e| {
            crate::Error::Internal(format!(
                "cannot lock the new cache {}: {e}",
                lock_path.display()
            ))
        })?;
        // For a person looking at the directory; ownership is the lock, not this text.
        let _ = writeln!(
            lock,
            "pid {} started {}",
            std::process::id(),
            chrono::Utc::now().to_rfc3339()
        );
        let path = root.join(&id);
        std::fs::create_dir(&path)?;
        Ok(CacheDir {
            path,
            lock_path,
            _lock: lock,
        })
    }

    /// The directory this process owns.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CacheDir {
    fn drop(&mut self) {
        // Still locked here: nobody else can be cleaning it at the same time.
        let _ = std::fs::remove_dir_all(&self.path);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// Removes the cache directories under `root` whose owner is gone (best effort: a cache that
/// cannot be removed now is tried again at the next start).
fn clean_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    for name in &names {
        if let Some(id) = name.strip_suffix(".lock") {
            let lock_path = root.join(name);
            let Ok(file) = OpenOptions::new().write(true).open(&lock_path) else {
                continue;
            };
            match file.try_lock() {
                Ok(()) => {
                    let _ = std::fs::remove_dir_all(root.join(id));
                    let _ = std::fs::remove_file(&lock_path);
                    tracing::info!(cache = id, "removed the cache of a process that is gone");
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    tracing::warn!(cache = id, error = %e, "cannot check a cache's owner")
                }
            }
        } else if !name.chars().all(|c| c.is_ascii_digit())
            && !names.contains(&format!("{name}.lock"))
            && root.join(name).is_dir()
        {
            // A directory of ours whose lock file is gone: its cleaner stopped halfway.
            let _ = std::fs::remove_dir_all(root.join(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_caches_are_kept_and_dead_ones_removed() {
        let root = tempfile_dir();
        let a = CacheDir::claim(&root).expect("a");
        let b = CacheDir::claim(&root).expect("b");
        assert_ne!(a.path(), b.path());
        // A dead process's cache: a lock file nobody holds, and its directory.
        std::fs::create_dir(root.join("dead")).expect("dir");
        std::fs::write(root.join("dead.lock"), "pid 1").expect("lock");
        std::fs::create_dir(root.join("123")).expect("legacy");
        let c = CacheDir::claim(&root).expect("c");
        assert!(!root.join("dead").exists() && !root.join("dead.lock").exists());
        assert!(a.path().is_dir() && b.path().is_dir() && c.path().is_dir());
        assert!(root.join("123").is_dir(), "legacy PID dirs are left alone");
        let a_path = a.path().to_path_buf();
        drop(a);
        assert!(!a_path.exists());
        let _ = std::fs::remove_dir_all(&root);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cache-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }
}
