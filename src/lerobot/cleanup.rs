//! A recording of nothing leaves nothing: the folders a dataset without episodes had are
//! removed, and its root too where armsim created it and nothing else is in it.

use std::path::Path;

/// The writer's folders in a dataset's root; nothing else is there when armsim made it (the
/// writer refuses a root that holds files).
const WRITER_FOLDERS: [&str; 3] = ["data", "meta", "videos"];

/// Removes a dataset without episodes: the writer's folders, then `root` itself where armsim
/// created it. Anything else in `root` was not armsim's, and then everything stays. Says what
/// it did, for the error line.
pub(super) fn remove_empty_dataset(root: &Path, created: bool) -> String {
    let shown = root.display();
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return "nothing was left".into(),
        Err(e) => return format!("{shown} is left as it is: cannot list it ({e})"),
    };
    let foreign: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !WRITER_FOLDERS.contains(&name.as_str()))
        .collect();
    if !foreign.is_empty() {
        return format!(
            "{shown} is left as it is: it also holds {} (not armsim's)",
            foreign.join(", ")
        );
    }
    for folder in WRITER_FOLDERS {
        match std::fs::remove_dir_all(root.join(folder)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return format!("cannot remove {shown}/{folder}: {e}"),
        }
    }
    if !created {
        return format!("the dataset's files are removed ({shown} was there before: left empty)");
    }
    match std::fs::remove_dir(root) {
        Ok(()) => format!("{shown} is removed"),
        Err(e) => format!("cannot remove {shown}: {e}"),
    }
}
