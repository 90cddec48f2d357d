//! What the default scene's colours look like in a rendered image (sRGB, flat material), for the
//! camera tests' pixel checks.

pub fn red(&[r, g, b]: &[u8; 3]) -> bool {
    r > 120 && r > g.saturating_add(70) && r > b.saturating_add(70)
}

pub fn green(&[r, g, b]: &[u8; 3]) -> bool {
    g > 100 && g > r.saturating_add(50) && g > b.saturating_add(50)
}

pub fn blue(&[r, g, b]: &[u8; 3]) -> bool {
    b > 120 && b > r.saturating_add(70) && b > g.saturating_add(70)
}

/// The table's wood (not the arm's orange).
pub fn wood(&[r, g, b]: &[u8; 3]) -> bool {
    let (r, g, b) = (u16::from(r), u16::from(g), u16::from(b));
    r > 60 && r > g + 15 && g > b + 10 && !(r > 170 && r > b + 120 && r > g + 60)
}

/// arm6's links.
pub fn orange(&[r, g, b]: &[u8; 3]) -> bool {
    r > 170 && i32::from(r) - i32::from(b) > 120 && i32::from(r) - i32::from(g) > 60
}

/// The goal zone's gizmo.
pub fn yellow(&[r, g, b]: &[u8; 3]) -> bool {
    r > 200 && g > 170 && b < 80
}
