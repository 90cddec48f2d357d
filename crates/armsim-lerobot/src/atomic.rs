//! Crash-safe file replacement: a file is written whole under a temporary name in its own folder
//! (`NAME.tmp`), fsynced, and only then renamed over `NAME`; the folder is then fsynced so that
//! the rename itself survives a power cut. A reader (or a recording killed at any moment) sees either
//! the old file or the new one, never half of one.
//!
//! The temporary names end in `.tmp`, so none of them matches LeRobot's `*.parquet` globs or its
//! `file-XXX.mp4` paths: a `.tmp` left by a kill during a write is ignored by every loader.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::LeRobotError;

/// `path` with `.tmp` appended to its file name.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Creates `path`'s parent folders.
pub(crate) fn create_parent(path: &Path) -> Result<(), LeRobotError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| LeRobotError::io(dir, e))?;
    }
    Ok(())
}

/// A complete, fsynced file under its temporary name, waiting for [`commit`](Self::commit).
/// Dropped uncommitted (the episode failed part-way), it removes its temporary file.
#[derive(Debug)]
pub(crate) struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    /// The file's size.
    pub bytes: u64,
    committed: bool,
}

impl Staged {
    /// Takes over `file`, already written in full at `tmp_path(path)`: fsyncs it.
    pub(crate) fn from_file(path: &Path, file: File) -> Result<Self, LeRobotError> {
        let tmp = tmp_path(path);
        file.sync_all().map_err(|e| LeRobotError::io(&tmp, e))?;
        let bytes = file
            .metadata()
            .map_err(|e| LeRobotError::io(&tmp, e))?
            .len();
        Ok(Self {
            tmp,
            path: path.to_path_buf(),
            bytes,
            committed: false,
        })
    }

    /// Writes `bytes` to `tmp_path(path)` and fsyncs it.
    pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<Self, LeRobotError> {
        let mut file = create_tmp(path)?;
        file.write_all(bytes)
            .map_err(|e| LeRobotError::io(tmp_path(path), e))?;
        Self::from_file(path, file)
    }

    /// Renames the temporary file over the final name and returns the file's size. The rename
    /// is visible to every process at once; it is durable once the folder is fsynced
    /// ([`sync_dir`]), which callers do after a group of renames: journaling file systems
    /// commit renames in the order they were made, so a power cut keeps a prefix of them.
    pub(crate) fn commit(mut self) -> Result<u64, LeRobotError> {
        std::fs::rename(&self.tmp, &self.path).map_err(|e| LeRobotError::io(&self.path, e))?;
        self.committed = true;
        Ok(self.bytes)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Creates (truncating) `tmp_path(path)`, making its folder first.
pub(crate) fn create_tmp(path: &Path) -> Result<File, LeRobotError> {
    create_parent(path)?;
    let tmp = tmp_path(path);
    File::create(&tmp).map_err(|e| LeRobotError::io(&tmp, e))
}

/// Fsyncs a folder (its entries: new and renamed files). On platforms where a folder cannot be
/// opened for that, there is nothing more to do.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), LeRobotError> {
    #[cfg(unix)]
    {
        let d = File::open(dir).map_err(|e| LeRobotError::io(dir, e))?;
        d.sync_all().map_err(|e| LeRobotError::io(dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
