//! The README and the guides under `docs/` hold together: every inline link `[text](target)` in
//! README.md and in each `.md` under docs/ (outside fenced code blocks and code spans) resolves,
//! and the README stays a front door of at most 300 lines.
//!
//! A relative target must name a file or folder that exists, relative to the linking file; a
//! `#anchor` (alone, or after `file.md`) must be the GitHub anchor of a heading in that markdown
//! file: the heading's text in lowercase, punctuation dropped except `-` and `_`, each space a
//! `-`, and a repeated heading numbered `-1`, `-2`, … Links to `http(s)://` and `mailto:` are not
//! fetched. Plain std: no armsim code, no network.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The README's length at most, in lines.
const README_MAX_LINES: usize = 300;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// README.md and every `.md` file under docs/, at any depth, sorted.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut folders = vec![root().join("docs")];
    while let Some(folder) = folders.pop() {
        let entries =
            fs::read_dir(&folder).unwrap_or_else(|e| panic!("reading {}: {e}", folder.display()));
        for entry in entries {
            let path = entry.expect("an entry of a docs folder").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A path as the messages show it: without `.` and `..`, relative to the repository root.
fn shown(path: &Path) -> String {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
        .strip_prefix(root())
        .unwrap_or(&normal)
        .display()
        .to_string()
}

fn is_fence(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("```") || trimmed.starts_with("~~~")
}

/// The lines outside fenced code blocks, with their numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if is_fence(line) {
            in_fence = !in_fence;
        } else if !in_fence {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// The line without its code spans (`…`), whose brackets are no links.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        let Some(close) = rest[open + 1..].find('`') else {
            break;
        };
        out.push_str(&rest[..open]);
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links `[text](target)` on a line.
fn link_targets(line: &str) -> Vec<String> {
    without_code_spans(line)
        .split("](")
        .skip(1)
        .map(|after| {
            after
                .split([')', ' ', '\t'])
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// The text of an ATX heading (`## Text`), or None for any other line.
fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    let text = line[hashes..].strip_prefix(' ')?;
    if (1..=6).contains(&hashes) {
        Some(text.trim_end_matches('#').trim())
    } else {
        None
    }
}

/// GitHub's anchor of a heading: lowercase, punctuation dropped except `-` and `_`, each space
/// a `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown text's headings; a repeated one gets `-1`, `-2`, … as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut found = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = heading_text(line) else {
            continue;
        };
        let base = slug(heading);
        let count = seen.entry(base.clone()).or_insert(0);
        found.insert(if *count == 0 {
            base
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    found
}

/// Whether the link from `file` (whose text is `text`) to `target` resolves; why not if not.
fn check(file: &Path, text: &str, target: &str) -> Result<(), String> {
    if ["http://", "https://", "mailto:"]
        .into_iter()
        .any(|scheme| target.starts_with(scheme))
    {
        return Ok(());
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let dest = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().expect("a file in a folder").join(path)
    };
    if !dest.exists() {
        return Err(format!("no file {}", shown(&dest)));
    }
    let Some(anchor) = anchor else {
        return Ok(());
    };
    let dest_text = if path.is_empty() {
        text.to_string()
    } else if dest.extension().is_some_and(|ext| ext == "md") {
        read(&dest)
    } else {
        return Err(format!(
            "#{anchor} points into {}, which is not markdown",
            shown(&dest)
        ));
    };
    if anchors(&dest_text).contains(anchor) {
        Ok(())
    } else {
        Err(format!(
            "no heading with the anchor #{anchor} in {}",
            shown(&dest)
        ))
    }
}

#[test]
fn every_link_in_the_readme_and_the_docs_resolves() {
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                checked += 1;
                if let Err(why) = check(&file, &text, &target) {
                    let at = shown(&file);
                    broken.push(format!("{at}:{number}: ({target}): {why}"));
                }
            }
        }
    }
    assert!(
        checked > 0,
        "no links found in README.md and docs/: the link parser is broken"
    );
    assert!(
        broken.is_empty(),
        "{} of {checked} links in README.md and docs/ do not resolve:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_readme_is_a_front_door_of_at_most_300_lines() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move the detail into a guide \
         under docs/ and link it from the README's map of the docs"
    );
}

#[test]
fn anchors_and_targets_are_read_as_on_github() {
    let text = concat!(
        "# armsim\n",
        "## Remote-control lockstep, binary TCP (the gripper project's protocol)\n",
        "```sh\n# not a heading\n```\n",
        "## `--ros2` flags\n## Protocols\n## Protocols\n####### seven\n#no space\n",
    );
    let found: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(
        found,
        [
            "--ros2-flags",
            "armsim",
            "protocols",
            "protocols-1",
            "remote-control-lockstep-binary-tcp-the-gripper-projects-protocol",
        ]
    );
    assert_eq!(
        link_targets("see [a](x.md#b), `[no](link)` and [c](https://d) [e](f \"title\")"),
        ["x.md#b", "https://d", "f"]
    );
}
