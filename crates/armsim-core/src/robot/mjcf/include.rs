//! MJCF `<include file>`: the included file's root children spliced in place of the element,
//! before the model is parsed, as MuJoCo does. Paths are relative to the model file's folder.

use std::path::Path;

use crate::robot::error::RobotError;
use crate::robot::xml::parse_xml_any;

/// Deeper nesting than this is taken for an include cycle.
const MAX_DEPTH: usize = 16;

/// `xml` with every `<include file>` replaced by the children of the included file's root
/// element (`<mujoco>` or `<mujocoinclude>`), recursively.
pub(super) fn expand(xml: &str, dir: &Path, depth: usize) -> Result<String, RobotError> {
    if !xml.contains("<include") {
        return Ok(xml.to_string());
    }
    let doc = parse_xml_any(xml)?;
    let mut spans = Vec::new();
    for node in doc.descendants().filter(|n| n.has_tag_name("include")) {
        let line = doc.text_pos_at(node.range().start).row;
        let file = node
            .attribute("file")
            .ok_or_else(|| RobotError::MissingAttribute {
                element: "include".into(),
                attribute: "file".into(),
                line: Some(line),
            })?;
        if depth >= MAX_DEPTH {
            return Err(RobotError::Unsupported {
                what: format!("<include> nested deeper than {MAX_DEPTH} files (a cycle?)"),
                line: Some(line),
            });
        }
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).map_err(|source| RobotError::Io {
            path: path.clone(),
            source,
        })?;
        let inner = expand(&text, dir, depth + 1)?;
        let included = parse_xml_any(&inner)?;
        let root = included.root_element();
        let body = match (root.first_child(), root.last_child()) {
            (Some(first), Some(last)) => inner[first.range().start..last.range().end].to_string(),
            _ => String::new(),
        };
        spans.push((node.range(), body));
    }
    let mut out = String::with_capacity(xml.len());
    let mut at = 0;
    for (range, body) in spans {
        out.push_str(&xml[at..range.start]);
        out.push_str(&body);
        at = range.end;
    }
    out.push_str(&xml[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_spliced_recursively_and_missing_files_are_named() {
        let dir = std::env::temp_dir().join(format!("armsim-include-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("a.xml"),
            "<mujocoinclude><default><joint damping=\"2\"/></default><include file=\"b.xml\"/></mujocoinclude>",
        )
        .unwrap();
        std::fs::write(dir.join("b.xml"), "<mujoco><asset/></mujoco>").unwrap();
        let out = expand(
            "<mujoco><include file=\"a.xml\"/><worldbody/></mujoco>",
            &dir,
            0,
        )
        .unwrap();
        assert_eq!(
            out,
            "<mujoco><default><joint damping=\"2\"/></default><asset/><worldbody/></mujoco>"
        );
        let e = expand("<mujoco><include file=\"nope.xml\"/></mujoco>", &dir, 0).unwrap_err();
        assert!(e.to_string().contains("nope.xml"), "{e}");
        std::fs::write(
            dir.join("self.xml"),
            "<mujoco><include file=\"self.xml\"/></mujoco>",
        )
        .unwrap();
        let e = expand("<mujoco><include file=\"self.xml\"/></mujoco>", &dir, 0).unwrap_err();
        assert!(e.to_string().contains("cycle"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
