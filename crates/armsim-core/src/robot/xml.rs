//! The first step of both loaders: XML parsed with roxmltree, syntax errors at their line and
//! column, and the root element checked.

use super::error::RobotError;

/// Parses `xml` whatever its root element, with syntax errors at their line and column.
pub(crate) fn parse_xml_any(xml: &str) -> Result<roxmltree::Document<'_>, RobotError> {
    roxmltree::Document::parse(xml).map_err(|e| {
        let pos = e.pos();
        RobotError::Xml {
            line: pos.row,
            column: pos.col,
            message: e.to_string(),
        }
    })
}

/// Parses `xml` and checks that its root element is `<expected>`: the first step of both
/// loaders, with syntax errors reported at their line and column.
pub(crate) fn parse_xml<'x>(
    xml: &'x str,
    expected: &'static str,
) -> Result<roxmltree::Document<'x>, RobotError> {
    let doc = parse_xml_any(xml)?;
    let found = doc.root_element().tag_name().name();
    if found != expected {
        return Err(RobotError::WrongRoot {
            expected,
            found: found.to_string(),
        });
    }
    Ok(doc)
}
